"""Columnar node state: idle, releasing, pipelined, used and allocatable as numpy arrays.

Why: choosing a node for a task means testing the task against every node and scoring the
ones that fit. Done node by node in Python that is ~10 µs per node, so 50 ms per task at
5,000 nodes. Here each resource is a column and each node a row, so the fit test and the
scores over all nodes are a handful of vector operations.

``NodeIndex`` mirrors the ``NodeInfo`` objects, which stay the source of truth: every
``NodeInfo.add_task`` / ``remove_task`` refreshes that node's row (Python lists; the arrays
catch up with every changed row when next read), so the arrays read are always exactly the
nodes' values and decisions are the same as the node-by-node path.

Comparisons reproduce ``Resource.less_equal(..., Dim.ZERO)``: a task's cpu and memory are always
compared, its other resources only where it requests them (a missing node value reads as 0),
with Volcano's tolerance of 0.1.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from lahar.resources import CPU, MEMORY, MIN_RESOURCE, Resource

if TYPE_CHECKING:
    from lahar.scheduler.api import NodeInfo
    from lahar.scheduler.fit import FitErrors

__all__ = ["NodeIndex", "ClassView"]


def _append_row(out: list[float], res: Resource, extra: list[str]) -> None:
    """``res`` as a row of the index appended to ``out``: cpu, memory,
    then each of ``extra``, the index's scalar resources in column order (0 where it has none)."""
    out.append(res.milli_cpu)
    out.append(res.memory)
    scalars = res.scalars
    for name in extra:
        out.append(scalars.get(name, 0.0) if scalars else 0.0)


def node_rows(node: "NodeInfo", columns: tuple[str, ...]) -> tuple[list[float], ...]:
    """The node's rows in an index whose scalar columns are ``columns``: allocatable, idle,
    releasing, pipelined and used. A session copy's rows are its node's (``NodeInfo.source``)
    while that node's version stands: kept on the node, they are made once, not every cycle.
    Nobody changes a row in place (a node index's ``refresh`` puts new ones)."""
    source = node.source
    if source is not None:
        kept = source.rows_kept
        if kept is not None and kept[0] == node.source_version and kept[1] == columns:
            return kept[2]
    extra = list(columns)
    rows: tuple[list[float], ...] = tuple(_row(res, extra) for res in (node.allocatable, node.idle, node.releasing, node.pipelined, node.used))
    if source is not None and source.version == node.source_version:
        source.rows_kept = (node.source_version, columns, rows)
    return rows


def _row(res: Resource, extra: list[str]) -> list[float]:
    """``res`` as a row whose scalar columns are ``extra`` (``_append_row``)."""
    row: list[float] = []
    _append_row(row, res, extra)
    return row


class NodeIndex:
    def __init__(self, nodes: list["NodeInfo"]) -> None:
        names = {CPU: 0, MEMORY: 1}
        for node in nodes:
            for name in node.allocatable.scalars or {}:
                names.setdefault(name, len(names))
        self.dims = names
        self.nodes = nodes
        self.row = {node.name: i for i, node in enumerate(nodes)}
        # Each array made at once from all its rows (one conversion, not one per row and node):
        # the same values ``refresh`` writes row by row.
        shape = (len(nodes), len(names))
        extra = self._extra = list(names)[2:]  # the scalar resources, in column order
        alloc: list[float] = []
        idle: list[float] = []
        releasing: list[float] = []
        pipelined: list[float] = []
        used: list[float] = []
        # Each row also as Python floats: ``refresh`` writes only these (a new list for a row,
        # never one changed in place), and ``ClassView.sync`` reads them (a scalar read or write
        # of a numpy row costs more than the test it feeds). The arrays catch up with the rows
        # refreshed since (``_behind``) when next read.
        self.room_rows: list[tuple[list[float], list[float], list[float]]] = []
        self.used_rows: list[list[float]] = []
        columns = tuple(extra)
        for node in nodes:
            rows = node_rows(node, columns)
            alloc.extend(rows[0])
            idle.extend(rows[1])
            releasing.extend(rows[2])
            pipelined.extend(rows[3])
            used.extend(rows[4])
            self.room_rows.append((rows[1], rows[2], rows[3]))
            self.used_rows.append(rows[4])
        self.alloc = _matrix(alloc, shape)
        self._idle, self._releasing, self._pipelined = _matrix(idle, shape), _matrix(releasing, shape), _matrix(pipelined, shape)
        self._used = _matrix(used, shape)
        self._pods = np.array([len(node.tasks) for node in nodes], dtype=np.float64)
        self.max_pods = np.array([node.max_task_num for node in nodes], dtype=np.float64)
        self.pod_counts: list[int] = [len(node.tasks) for node in nodes]
        self.max_pod_counts: list[float] = [node.max_task_num for node in nodes]
        self._behind: set[int] = set()
        self._class_cache: dict[tuple, tuple[int, tuple[np.ndarray, np.ndarray] | None]] = {}
        self.changes: list[int] = list(range(len(nodes)))  # every row, as a refresh of each would leave it
        self.views: dict[tuple[int, str], "ClassView"] = {}  # allocate's, by (request's number, constraints)
        for node in nodes:
            node.index = self

    def _values(self, res: Resource) -> list[float]:
        """``res`` as a row of the index (scalars it has no column for are left out)."""
        return _row(res, self._extra)

    def refresh(self, node: "NodeInfo") -> None:
        """Copy one node's current values into its row (the arrays' copy when next read)."""
        i = self.row[node.name]
        self.room_rows[i] = (self._values(node.idle), self._values(node.releasing), self._values(node.pipelined))
        self.used_rows[i] = self._values(node.used)
        self.pod_counts[i] = len(node.tasks)
        self._behind.add(i)
        self.changes.append(i)

    def _catch_up(self) -> None:
        """Write the rows refreshed since the arrays were last read into them, all at once."""
        if not self._behind:
            return
        rows = sorted(self._behind)
        self._behind = set()
        rooms = [self.room_rows[i] for i in rows]
        self._idle[rows] = [room[0] for room in rooms]
        self._releasing[rows] = [room[1] for room in rooms]
        self._pipelined[rows] = [room[2] for room in rooms]
        self._used[rows] = [self.used_rows[i] for i in rows]
        self._pods[rows] = [self.pod_counts[i] for i in rows]

    @property
    def idle(self) -> np.ndarray:
        self._catch_up()
        return self._idle

    @property
    def releasing(self) -> np.ndarray:
        self._catch_up()
        return self._releasing

    @property
    def pipelined(self) -> np.ndarray:
        self._catch_up()
        return self._pipelined

    @property
    def used(self) -> np.ndarray:
        self._catch_up()
        return self._used

    @property
    def pods(self) -> np.ndarray:
        self._catch_up()
        return self._pods

    def request(self, res: Resource) -> tuple[np.ndarray, np.ndarray] | None:
        """(columns to compare, request values) for a task; None if it asks for a resource no node has."""
        return self.numbered_request(res)[1]

    def numbered_request(self, res: Resource) -> tuple[int, tuple[np.ndarray, np.ndarray] | None]:
        """``request`` with a number for its values, the same each time (a cheap key)."""
        key = (res.milli_cpu, res.memory, tuple(sorted((res.scalars or {}).items())))
        found = self._class_cache.get(key)
        if found is not None:
            return found
        found = self._class_cache[key] = (len(self._class_cache), self._columns(res))
        return found

    def _columns(self, res: Resource) -> tuple[np.ndarray, np.ndarray] | None:
        cols, values = [0, 1], [res.milli_cpu, res.memory]
        for name, value in (res.scalars or {}).items():
            col = self.dims.get(name)
            if col is None:
                if value >= MIN_RESOURCE:
                    return None
                continue
            cols.append(col)
            values.append(value)
        return np.array(cols), np.array(values)

    @staticmethod
    def _fits(values: np.ndarray, room: np.ndarray) -> np.ndarray:
        return ((values < room) | (np.abs(values - room) < MIN_RESOURCE)).all(axis=1)

    def fits_future(self, req: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        cols, values = req
        room = self.idle[:, cols] + self.releasing[:, cols] - self.pipelined[:, cols]
        return self._fits(values, room)

    def fits_idle(self, req: tuple[np.ndarray, np.ndarray], rows: np.ndarray | None = None) -> np.ndarray:
        """Whether each of ``rows`` (every row when None) has the idle room for ``req``."""
        cols, values = req
        return self._fits(values, self.idle[:, cols] if rows is None else self.idle[np.ix_(rows, cols)])

    def short_dimension_counts(self, req: tuple[np.ndarray, np.ndarray], rows: np.ndarray) -> dict[str, int]:
        """How many of ``rows`` fail first (in the task's order of resources) on each resource."""
        cols, values = req
        room = self.idle[np.ix_(rows, cols)] + self.releasing[np.ix_(rows, cols)] - self.pipelined[np.ix_(rows, cols)]
        short = ~((values < room) | (np.abs(values - room) < MIN_RESOURCE))
        first = np.bincount(short.argmax(axis=1), minlength=len(cols))
        names = {col: name for name, col in self.dims.items()}
        return {names[int(cols[k])]: int(n) for k, n in enumerate(first) if n}


def _matrix(flat: list[float], shape: tuple[int, int]) -> np.ndarray:
    """A float array of ``shape`` from its values row after row (also when there are none)."""
    return np.array(flat, dtype=np.float64).reshape(shape)


def _fits_row(values: list[float], room: list[float]) -> bool:
    """``_fits`` for one row, in plain Python (the same comparisons on the same floats)."""
    for want, have in zip(values, room):
        if not (want < have or abs(want - have) < MIN_RESOURCE):
            return False
    return True


class ClassView:
    """The best node for one request class, kept current row by row.

    A *class* is every task with the same request and the same placement constraints. Which
    nodes it fits and their scores change only on nodes whose rows changed since the class last
    looked, so a placement costs a few scalar updates instead of a pass over all nodes. The view
    keeps each row's score where the row is a candidate (room for the task in the future, every
    predicate passed) and -inf elsewhere, twice: once over every candidate and once over the
    candidates with idle room now. The best node is then one ``argmax``. The whole arrays are
    built with vector operations once; changed rows are redone with the scalar functions, which
    compute exactly the same values.
    """

    def __init__(self, index: NodeIndex, req: tuple[np.ndarray, np.ndarray], static: np.ndarray, pod_limit: bool, scorer, row_score) -> None:
        self.index = index
        self.row_score = row_score
        self.position = len(index.changes)
        every = np.arange(len(index.nodes))
        allowed = static & (index.max_pods > index.pods) if pod_limit else static
        candidates = index.fits_future(req) & allowed
        scores = scorer(every) if len(every) else np.zeros(0)
        self.best_future = np.where(candidates, scores, -np.inf)
        self.best_idle = np.where(candidates & index.fits_idle(req), scores, -np.inf)
        # typed: compiled, ``sync`` then indexes lists and adds floats natively (``tolist`` is untyped)
        self.static: list[bool] = static.tolist()
        self.pod_limit = pod_limit
        self._cols: list[int] = req[0].tolist()
        self._values: list[float] = req[1].tolist()
        self.errors: tuple[int, FitErrors] | None = None  # (position, why) of the last search that found no node

    def sync(self) -> None:
        index = self.index
        if self.position == len(index.changes):
            return
        rows = set(index.changes[self.position:])
        self.position = len(index.changes)
        cols, values, static = self._cols, self._values, self.static
        room_rows, pods, max_pods = index.room_rows, index.pod_counts, index.max_pod_counts
        for k in rows:
            score = -math.inf
            idle_score = -math.inf
            if static[k] and (not self.pod_limit or max_pods[k] > pods[k]):
                idle, releasing, pipelined = room_rows[k]
                if _fits_row(values, [idle[c] + releasing[c] - pipelined[c] for c in cols]):
                    score = self.row_score(index.nodes[k])
                    if _fits_row(values, [idle[c] for c in cols]):
                        idle_score = score
            self.best_future[k] = score
            self.best_idle[k] = idle_score

    def choose(self) -> int | None:
        """The best row: among nodes with idle room first, else with future room; ties to the lowest row."""
        self.sync()
        for best in (self.best_idle, self.best_future):
            if len(best):
                row = int(best.argmax())
                if best[row] > -math.inf:
                    return row
        return None
