"""capacity: explicit deserved shares and hard capabilities, flat or as a tree of queues.

Reference section 4.2. A queue may run above its deserved share up to its real capability;
what it holds above deserved is what others reclaim. With ``enableHierarchy`` every queue
takes part, ``root`` sits on top (its deserved is the sum of its children's, its capability
unlimited unless set), a job may only sit in a leaf, and every check is repeated for each
ancestor. ``ancestorReclaimLevel`` lets a queue reclaim through an ancestor that still has
room, and makes victims pass the same test at each diverging ancestor.

Lahar argument: ``schedulableStates`` (see ``queueattr``).
"""

from __future__ import annotations

from typing import Final

from lahar.resources import MAX_INT64, Dim, Resource, exceeded_part, intersection, res_max
from lahar.scheduler.api import JobInfo, QueueInfo, TaskInfo
from lahar.scheduler.framework.session import ABSTAIN, EventHandler, PERMIT, REJECT, Session
from lahar.scheduler.plugins.base import Plugin
from lahar.scheduler.plugins.queueattr import QueueAttr, add_job, admits, capability_of, schedulable_states

ROOT: Final = "root"


def _update_share(attr: QueueAttr) -> None:
    if attr.deserved.is_empty():
        attr.share = 1.0
        return
    from lahar.resources import share

    attr.share = max([0.0] + [share(attr.allocated.get(n), attr.deserved.get(n)) for n in attr.deserved.resource_names()])


def _compare_share_with_deserved(left: QueueAttr, right: QueueAttr) -> int:
    if left.share == right.share:
        l_has, r_has = not left.deserved.is_empty(), not right.deserved.is_empty()
        if l_has == r_has:
            return 0
        return -1 if l_has else 1
    return -1 if left.share < right.share else 1


def _common_level(left: QueueAttr, right: QueueAttr) -> int:
    level = 0
    for i in range(min(len(left.ancestors), len(right.ancestors))):
        if left.ancestors[i] != right.ancestors[i]:
            return level
        level = i
    return level


def _ancestor_at_depth(attr: QueueAttr, depth: int) -> str | None:
    if depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[len(attr.ancestors) - depth]


class CapacityPlugin(Plugin):
    name = "capacity"
    reads_clock = False
    queue_answers_read_requests = True

    def on_session_open(self, ssn: Session) -> None:
        self.states = schedulable_states(self.arguments)
        level = self.arguments.get_int("ancestorReclaimLevel", 0)
        self.ancestor_level = max(level, 0)
        self.hierarchy = self.enabled_hierarchy
        self.attrs: dict[str, QueueAttr] = {}
        self.total = ssn.total_resource.clone()
        self.ready = self._build_hierarchy(ssn) if self.hierarchy else self._build_flat(ssn)
        ssn.queue_attrs = self.attrs  # type: ignore[attr-defined]
        self._register(ssn)

    # ----------------------------------------------------------------- building attributes

    def _total_guarantee(self, ssn: Session) -> Resource:
        total = Resource()
        for queue in ssn.queues.values():
            if queue.queue.guarantee_list:
                total.add(Resource.from_list(queue.queue.guarantee_list))
        return total

    def _build_flat(self, ssn: Session) -> bool:
        total_guarantee = self._total_guarantee(ssn)
        for job in ssn.listed_jobs():
            attr = self.attrs.get(job.queue)
            if attr is None:
                attr = self.attrs[job.queue] = self._flat_attr(ssn.queues[job.queue], total_guarantee)
            add_job(attr, job)
        for attr in self.attrs.values():
            if attr.real_capability is not None:
                attr.deserved.min_dimension_resource(attr.real_capability, Dim.INFINITY)
            attr.deserved = res_max(attr.deserved, attr.guarantee)
            _update_share(attr)
        self.queue_order = lambda l, r: self._flat_order(l, r)
        return True

    def _flat_attr(self, queue: QueueInfo, total_guarantee: Resource) -> QueueAttr:
        attr = QueueAttr(name=queue.name, deserved=Resource.from_list(queue.queue.spec.deserved))
        attr.capability = capability_of(queue.queue.spec.capability)
        if queue.queue.guarantee_list:
            attr.guarantee = Resource.from_list(queue.queue.guarantee_list)
        real = exceeded_part(self.total, total_guarantee).add(attr.guarantee)
        if attr.capability is not None:
            real.min_dimension_resource(attr.capability, Dim.INFINITY)
        else:
            attr.capability = Resource()
        attr.real_capability = real
        return attr

    def _new_tree_attr(self, queue: QueueInfo) -> QueueAttr:
        attr = QueueAttr(name=queue.name, deserved=Resource.from_list(queue.queue.spec.deserved))
        attr.capability = Resource.from_list(queue.queue.spec.capability) if queue.queue.spec.capability else Resource()
        attr.real_capability = Resource()
        if queue.queue.guarantee_list:
            attr.guarantee = Resource.from_list(queue.queue.guarantee_list)
        return attr

    def _link(self, ssn: Session, queue: QueueInfo, visiting: set[str]) -> bool:
        """Attach ``queue`` under its parent, creating ancestors first. False on a cycle or a missing parent."""
        if queue.name == ROOT:
            return True
        if queue.name in visiting:
            return False
        parent_name = queue.queue.spec.parent or ROOT
        parent = ssn.queues.get(parent_name)
        if parent is None:
            return False
        visiting.add(queue.name)
        if parent.uid not in self.attrs:
            self.attrs[parent.uid] = self._new_tree_attr(parent)
            if not self._link(ssn, parent, visiting):
                return False
        visiting.discard(queue.name)
        parent_attr = self.attrs[parent.uid]
        if queue.uid not in parent_attr.children:
            parent_attr.children.append(queue.uid)
        self.attrs[queue.uid].ancestors = [*parent_attr.ancestors, parent.uid]
        self.attrs[queue.uid].parent = parent.uid
        return True

    def _build_hierarchy(self, ssn: Session) -> bool:
        for queue in ssn.queues.values():
            if queue.uid in self.attrs:
                continue
            self.attrs[queue.uid] = self._new_tree_attr(queue)
            if not self._link(ssn, queue, set()):
                return False
        for job in ssn.listed_jobs():
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue
            if attr.children:
                return False
            before = [attr.allocated.clone(), attr.request.clone(), attr.inqueue.clone(), attr.elastic.clone()]
            add_job(attr, job)
            deltas = [
                attr.allocated.clone().sub(before[0]),
                attr.request.clone().sub(before[1]),
                attr.inqueue.clone().sub(before[2]),
                attr.elastic.clone().sub(before[3]),
            ]
            for ancestor in attr.ancestors:
                a = self.attrs[ancestor]
                for target, delta in zip((a.allocated, a.request, a.inqueue, a.elastic), deltas):
                    target.add(delta)
        root = self.attrs.get(ROOT)
        if root is None:
            return False
        if root.capability is None or root.capability.is_empty():
            root.capability = Resource.infinite()
            for name in self.total.scalars or {}:
                root.capability.set_scalar(name, MAX_INT64)
        root.real_capability = root.capability
        self._check_tree(root)
        for attr in self.attrs.values():
            _update_share(attr)
        self.queue_order = lambda l, r: self._tree_order(l, r)
        return True

    def _check_tree(self, attr: QueueAttr) -> None:
        total_guarantee, total_deserved = Resource(), Resource()
        children = [self.attrs[c] for c in attr.children]
        for child in children:
            child.deserved = res_max(child.deserved, child.guarantee)
            total_deserved.add(child.deserved)
            total_guarantee.add(child.guarantee)
            cap, parent_cap = child.capability, attr.capability
            assert cap is not None and parent_cap is not None  # every queue of the tree has one (_new_tree_attr)
            if cap.milli_cpu <= 0:
                cap.milli_cpu = parent_cap.milli_cpu
            if cap.memory <= 0:
                cap.memory = parent_cap.memory
            if parent_cap.scalars is not None:
                if cap.scalars is None:
                    cap.scalars = {}
                for name, value in parent_cap.scalars.items():
                    cap.scalars.setdefault(name, value)
        if attr.name == ROOT:
            attr.guarantee, attr.deserved = total_guarantee, total_deserved
        for child in children:
            assert attr.real_capability is not None and child.capability is not None
            real = exceeded_part(attr.real_capability, total_guarantee).add(child.guarantee)
            real.min_dimension_resource(child.capability, Dim.INFINITY)
            child.real_capability = real
        for child in children:
            self._check_tree(child)

    # ----------------------------------------------------------------- ordering

    def _flat_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        return _compare_share_with_deserved(self.attrs[left.uid], self.attrs[right.uid])

    def _is_leaf(self, uid: str) -> bool:
        return not self.attrs[uid].children

    def _tree_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        l_leaf, r_leaf = self._is_leaf(left.uid), self._is_leaf(right.uid)
        if l_leaf != r_leaf:
            return -1 if l_leaf else 1
        la, ra = self.attrs[left.uid], self.attrs[right.uid]
        if not l_leaf:
            return _compare_share_with_deserved(la, ra)
        level = _common_level(la, ra)
        lp = la.ancestors[level + 1] if level + 1 < len(la.ancestors) else la.name
        rp = ra.ancestors[level + 1] if level + 1 < len(ra.ancestors) else ra.name
        return _compare_share_with_deserved(self.attrs[lp], self.attrs[rp])

    def _victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        pa = self.attrs[preemptor.uid]
        l_level = _common_level(self.attrs[left.uid], pa)
        r_level = _common_level(self.attrs[right.uid], pa)
        if l_level == r_level:
            return 0
        return -1 if l_level > r_level else 1

    # ----------------------------------------------------------------- callbacks

    def _register(self, ssn: Session) -> None:
        if self.ready:
            ssn.add("queue_order", self.name, self.queue_order)
        if self.hierarchy and self.ready:
            ssn.add("victim_queue_order", self.name, self._victim_queue_order)
        ssn.add("reclaimable", self.name, self._reclaimable(ssn))
        ssn.add("preemptive", self.name, self._preemptive)
        ssn.add("allocatable", self.name, self._allocatable)
        ssn.add("job_enqueueable", self.name, self._enqueueable(ssn))
        ssn.add("job_enqueued", self.name, self._enqueued)
        ssn.add("deserved", self.name, lambda q: self.attrs[q.uid].deserved if q.uid in self.attrs else None)
        ssn.add_event_handler(EventHandler(self._on_event(ssn, 1), self._on_event(ssn, -1)))

    def _chain(self, uid: str) -> list[str]:
        """The queue and its ancestors, leaf first."""
        return [uid, *reversed(self.attrs[uid].ancestors)]

    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if queue.state not in self.states or not self.ready:
            return False
        if self.hierarchy and not self._is_leaf(queue.uid):
            return False
        for uid in self._chain(queue.uid):
            attr = self.attrs[uid]
            future = attr.allocated.clone().add(task.resreq)
            if not future.less_equal_with_dimension_and_resources_name(attr.real_capability, task.resreq)[0]:
                return False
        return True

    def _preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        if not self.ready or queue.state not in self.states:
            return False
        attr = self.attrs[queue.uid]
        total = Resource()
        for task in tasks:
            total.add(task.resreq)
        future = attr.allocated.clone().add(total)
        if not future.less_equal_with_dimension_and_resources_name(attr.real_capability, total)[0]:
            return False
        if future.less_equal_partly_with_dimension_zero_filtered(attr.deserved, total)[0]:
            return True
        if not (self.hierarchy and self.ancestor_level > 0):
            return False
        for level in range(1, self.ancestor_level + 1):
            ancestor = _ancestor_at_depth(attr, level)
            if ancestor is None or ancestor == ROOT or ancestor not in self.attrs:
                continue
            a = self.attrs[ancestor]
            if a.allocated.clone().add(total).less_equal_partly_with_dimension_zero_filtered(a.deserved, total)[0]:
                return True
        return False

    def _enqueueable(self, ssn: Session):
        def enqueueable(job: JobInfo) -> int:
            if not self.ready or (self.hierarchy and not self._is_leaf(job.queue)):
                return REJECT
            queue = ssn.queues[job.queue]
            if queue.state not in self.states:
                ssn.note(job.uid, kind="queue-state", queue=queue.name, state=queue.state)
                return REJECT
            if job.min_resources is None:
                return PERMIT
            minimum = job.get_min_resources()
            for uid in self._chain(job.queue):
                ok, names = admits(self.attrs[uid], minimum)
                if not ok:
                    ssn.note(job.uid, kind="queue-quota", queue=uid, resources=names, plugin=self.name)
                    return REJECT
            return PERMIT

        return enqueueable

    def _enqueued(self, job: JobInfo) -> None:
        if job.min_resources is None or job.queue not in self.attrs:
            return
        minimum = job.get_min_resources()
        attr = self.attrs[job.queue]
        attr.inqueue.add(minimum)
        if self.hierarchy:
            for ancestor in attr.ancestors:
                self.attrs[ancestor].inqueue.add(minimum)

    def _on_event(self, ssn: Session, sign: int):
        def handler(task: TaskInfo) -> None:
            job = ssn.jobs.get(task.job)
            attr = self.attrs.get(job.queue) if job else None
            if attr is None:
                return
            targets = [attr] + ([self.attrs[a] for a in attr.ancestors] if self.hierarchy else [])
            for target in targets:
                if sign > 0:
                    target.allocated.add(task.resreq)
                else:
                    target.allocated.sub(task.resreq)
            _update_share(attr)

        return handler

    # ----------------------------------------------------------------- reclaim victims

    def _reclaimable(self, ssn: Session):
        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]):
            if not self.ready:
                return [], REJECT
            job = ssn.jobs.get(reclaimer.job)
            reclaimer_attr = self.attrs.get(job.queue) if job else None
            if reclaimer_attr is None:
                return [], REJECT
            victims: list[TaskInfo] = []
            allocations: dict[str, Resource] = {}
            ordered = ssn.build_victims_queue(reclaimees, reclaimer)
            while not ordered.empty():
                task = ordered.pop()
                if self._is_victim(ssn, task, reclaimer, reclaimer_attr, allocations):
                    victims.append(task)
            return victims, PERMIT

        return reclaimable

    def _is_victim(self, ssn: Session, task: TaskInfo, reclaimer: TaskInfo, reclaimer_attr: QueueAttr, allocations: dict[str, Resource]) -> bool:
        job = ssn.jobs.get(task.job)
        attr = self.attrs.get(job.queue) if job is not None else None
        if job is None or attr is None:
            return False
        if not [n for n in intersection(task.resreq, reclaimer.init_resreq) if n != "pods"]:
            return False  # no resource in common with the reclaimer
        allocated = allocations.setdefault(job.queue, attr.allocated.clone())
        if not attr.guarantee.less_equal(allocated.clone().sub(task.resreq), Dim.ZERO):
            return False
        if not intersection(task.resreq, attr.deserved):
            if self._sibling_best_effort(reclaimer, reclaimer_attr, attr):
                return False
        elif not allocated.greater_partly_with_relevant_dimensions(attr.deserved, task.resreq)[0]:
            return False
        checked = self._ancestors_allow(task, reclaimer_attr, attr, allocations)
        if checked is None:
            return False
        allocated.sub(task.resreq)
        for ancestor_allocated in checked:
            ancestor_allocated.sub(task.resreq)
        return True

    def _sibling_best_effort(self, reclaimer: TaskInfo, reclaimer_attr: QueueAttr, attr: QueueAttr) -> bool:
        if not (self.hierarchy and self.ancestor_level > 0):
            return False
        mine = {_ancestor_at_depth(reclaimer_attr, d) for d in range(1, self.ancestor_level + 1)} - {None, ROOT}
        theirs = {_ancestor_at_depth(attr, d) for d in range(1, self.ancestor_level + 1)} - {None, ROOT}
        shares_ancestor = bool(mine & theirs)
        return shares_ancestor and not intersection(reclaimer.resreq, reclaimer_attr.deserved)

    def _ancestors_allow(self, task: TaskInfo, reclaimer_attr: QueueAttr, attr: QueueAttr, allocations: dict[str, Resource]) -> list[Resource] | None:
        checked: list[Resource] = []
        if not (self.hierarchy and self.ancestor_level > 0):
            return checked
        for level in range(1, self.ancestor_level + 1):
            theirs = _ancestor_at_depth(attr, level)
            if theirs is None or theirs == ROOT or _ancestor_at_depth(reclaimer_attr, level) == theirs:
                continue
            ancestor = self.attrs.get(theirs)
            if ancestor is None:
                return None
            allocated = allocations.setdefault(theirs, ancestor.allocated.clone())
            checked.append(allocated)
            if not intersection(task.resreq, ancestor.deserved):
                continue
            if not allocated.greater_partly_with_relevant_dimensions(ancestor.deserved, task.resreq)[0]:
                return None
        return checked


__all__ = ["CapacityPlugin", "ABSTAIN"]
