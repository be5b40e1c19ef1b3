"""Statements run on the database driver's own cursor, in the caller's SQLAlchemy transaction.

``SqlStore`` runs every write's statements, the watch's reads, lists and the savepoints this
way; other reads go through SQLAlchemy. See ``DriverStatements`` for why.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection

__all__ = ["DriverStatements"]


class DriverStatements:
    """The statements of every write, run on the database driver's cursor in the caller's
    transaction, each compiled once for the dialect.

    Why: through ``Connection.execute`` each statement costs tens of microseconds of Python
    (execution context, result wrapping) against a few for the driver itself, and every write
    runs two or more (measured: the largest cost of the server's control loop after the
    savepoints, when a write was four). The statements carry plain strings and integers, which
    need no type processing; so do the watch's reads (a watch runs on every request) and lists (whose rows
    SQLAlchemy would wrap one by one). Other reads keep going through SQLAlchemy.
    """

    def __init__(self, dialect) -> None:
        self.dialect = dialect
        self._compiled: dict[object, tuple[str, Callable[[dict], Any]]] = {}

    def _prepared(self, statement) -> tuple[str, Callable[[dict], Any]]:
        """The statement's text for the dialect, and how to make the driver's parameters of the
        caller's: for a positional driver (SQLite) a tuple in the statement's order, picked by
        one ``itemgetter`` call (a value the statement itself holds, as ``id = 1``, is taken
        from it when the caller gives none); for others a dict."""
        found = self._compiled.get(statement)
        if found is None:
            compiled = statement.compile(dialect=self.dialect)
            defaults = dict(compiled.params)
            if self.dialect.positional:
                found = (compiled.string, _positional(tuple(compiled.positiontup), defaults))
            else:
                found = (compiled.string, lambda params: {**defaults, **params})
            self._compiled[statement] = found
        return found

    def _execute(self, conn: Connection, statement, params: dict):
        text_, arguments = self._prepared(statement)
        cursor = _cursor(conn)
        cursor.execute(text_, arguments(params))
        return cursor

    def run(self, conn: Connection, statement, params: dict) -> None:
        self._execute(conn, statement, params).close()

    def each(self, conn: Connection, statement, params: list[dict]) -> None:
        """The statement once for each set of parameters, in one call of the driver
        (``executemany``: the loop runs in the driver, not in Python)."""
        text_, arguments = self._prepared(statement)
        cursor = _cursor(conn)
        try:
            cursor.executemany(text_, [arguments(one) for one in params])
        finally:
            cursor.close()

    def plain(self, conn: Connection, text_: str) -> None:
        """A statement without parameters, as written (a savepoint's: every write request takes
        one, and the request's own batch another; through ``exec_driver_sql`` each cost more
        than the driver's work)."""
        cursor = _cursor(conn)
        try:
            cursor.execute(text_)
        finally:
            cursor.close()

    def count(self, conn: Connection, statement, params: dict) -> int:
        """How many rows the statement changed."""
        cursor = self._execute(conn, statement, params)
        try:
            return cursor.rowcount
        finally:
            cursor.close()

    def one(self, conn: Connection, statement, params: dict) -> tuple | None:
        """The first row, or None."""
        cursor = self._execute(conn, statement, params)
        try:
            return cursor.fetchone()
        finally:
            cursor.close()

    def all(self, conn: Connection, statement, params: dict) -> list[tuple]:
        """Every row (of plain integers and strings: no type processing is needed)."""
        cursor = self._execute(conn, statement, params)
        try:
            return cursor.fetchall()
        finally:
            cursor.close()


def _positional(names: tuple[str, ...], defaults: dict) -> Callable[[dict], tuple]:
    """Parameters in ``names`` order from the caller's dict; ``defaults`` fill what it lacks."""
    if not names:
        return lambda params: ()
    pick = itemgetter(*names)
    single = len(names) == 1

    def arguments(params: dict) -> tuple:
        try:
            picked = pick(params)
        except KeyError:
            picked = pick({**defaults, **params})
        return (picked,) if single else picked

    return arguments


def _cursor(conn: Connection):
    """A cursor of the driver's own connection under ``conn``, in its transaction."""
    return conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
