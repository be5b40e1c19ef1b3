"""Who may do what to which object (the rules of issue "security"), given the queue ACLs.

- admins may do everything;
- queues: creating one needs the admin ACL of its parent; updating, deleting and operating one
  needs its admin ACL (ACLs are inherited down the tree);
- work (jobs, podgroups, bare pods) may be submitted to a queue whose submit ACL admits the
  user, and is stamped with its owner; a user reads, changes and deletes only their own work
  unless they administer its queue, and moves it only to a queue they may submit to; a pod
  joins only a podgroup its user owns, or one in a queue they administer;
- nodes, priority classes, tokens: admins only; a queue Command needs the queue's admin ACL.

``None`` as principal means authentication is off: everything is allowed.
"""

from __future__ import annotations

from typing import Callable

from lahar.errors import Forbidden
from lahar.model.base import ApiObject
from lahar.model.cluster import Command
from lahar.model.job import Job
from lahar.model.queue import ROOT, Queue
from lahar.model.workload import Pod, PodGroup
from lahar.security import OWNER, Principal, acl_admits, check_admin, check_submit

__all__ = ["Access", "queue_of"]

Lookup = Callable[[str], Queue | None]


def queue_of(obj: ApiObject | dict) -> str | None:
    """The queue a piece of work belongs to (None for other kinds)."""
    if isinstance(obj, dict):
        kind, spec, meta = obj.get("kind"), obj.get("spec") or {}, obj.get("metadata") or {}
        if kind in ("Job", "PodGroup"):
            return spec.get("queue") or "default"
        if kind == "Pod":
            return (meta.get("annotations") or {}).get("scheduling.volcano.sh/queue-name", "default")
        return None
    if isinstance(obj, (Job, PodGroup)):
        return obj.queue
    if isinstance(obj, Pod):
        return obj.annotations.get("scheduling.volcano.sh/queue-name", "default")
    return None


class Access:
    """``lookup`` finds a queue by name; ``group_lookup`` a stored podgroup (its document) by
    key, for the pods that name one (none found: the pod joins no podgroup yet)."""

    def __init__(self, lookup: Lookup, group_lookup: Callable[[str], dict | None] = lambda key: None) -> None:
        self.lookup = lookup
        self.group_lookup = group_lookup

    def create(self, who: Principal | None, obj: ApiObject) -> None:
        if who is None or who.admin:
            return
        if isinstance(obj, Queue):
            check_admin(who, obj.parent_name or ROOT, self.lookup, f"create a child queue {obj.name} under")
        elif isinstance(obj, (Job, PodGroup, Pod)):
            if not (isinstance(obj, Pod) and self._joins(who, obj)):
                check_submit(who, queue_of(obj) or "default", self.lookup)
            obj.metadata.annotations[OWNER] = who.user
        elif isinstance(obj, Command):
            target = obj.target.name if obj.target else ""
            check_admin(who, target, self.lookup, f"send {obj.action} to")
        else:
            raise Forbidden(f"{who.describe()} may not create {obj.kind} {obj.key}: only admins may")

    def change(self, who: Principal | None, obj: ApiObject | dict, verb: str) -> None:
        """Update or delete an existing object (``obj`` as stored)."""
        if who is None or who.admin:
            return
        kind = obj["kind"] if isinstance(obj, dict) else obj.kind
        name = obj["metadata"]["name"] if isinstance(obj, dict) else obj.name
        if kind == "Queue":
            check_admin(who, name, self.lookup, verb)
            return
        queue = queue_of(obj)
        if queue is not None:
            if self.owns(who, obj):
                return
            check_admin(who, queue, self.lookup, f"{verb} {kind} {name}, owned by someone else, in")
            return
        raise Forbidden(f"{who.describe()} may not {verb} {kind} {name}: only admins may")

    def move(self, who: Principal | None, obj: ApiObject, old: ApiObject) -> None:
        """A replace of ``old`` by ``obj`` that moves work to another queue submits it there:
        the new queue's submit ACL must admit the user (admins, and everyone with
        authentication off, may move it)."""
        if who is None or who.admin:
            return
        target = queue_of(obj)
        if target is not None and target != queue_of(old):
            check_submit(who, target, self.lookup)
        if isinstance(obj, Pod) and isinstance(old, Pod) and obj.group_name != old.group_name:
            self._joins(who, obj)

    def _joins(self, who: Principal, pod: Pod) -> bool:
        """Whether ``pod`` joins a stored podgroup (``Forbidden`` if ``who`` may not add it).

        Such a pod runs as one of the podgroup's tasks, in the podgroup's queue, whatever its
        own annotation says: adding it changes that work. The podgroup's owner may (if they may
        still submit to its queue), and so may those who administer its queue."""
        if pod.group_name is None:
            return False
        key = f"{pod.metadata.namespace or 'default'}/{pod.group_name}"
        group = self.group_lookup(key)
        if group is None:
            return False
        queue = queue_of(group) or "default"
        if self.administers(who, queue):
            return True
        if not self.owns(who, group):
            raise Forbidden(f"{who.describe()} may not add pods to PodGroup {key}, owned by someone else, in queue {queue}: only its owner and those who administer the queue may")
        check_submit(who, queue, self.lookup)
        return True

    @staticmethod
    def keep_owner(who: Principal | None, obj: ApiObject, old: ApiObject) -> None:
        """The owner stamp of a replaced object (``obj``, to be written over ``old``) is the
        server's: a user's body cannot drop it or name someone else. An admin's body (or any
        body with authentication off) may name a new owner; one that names none keeps the old."""
        owner = old.annotations.get(OWNER)
        annotations = obj.metadata.annotations
        if who is not None and not who.admin:
            annotations.pop(OWNER, None)
        if owner is not None:
            annotations.setdefault(OWNER, owner)

    def may_read(self, who: Principal | None, obj: dict) -> bool:
        if who is None or who.admin:
            return True
        if obj.get("kind") in ("Token",):
            return False
        if obj.get("kind") == "LaharEvent":
            return self._may_read_event(who, obj)
        queue = queue_of(obj)
        if queue is None or self.owns(who, obj):
            return True
        return self.administers(who, queue)

    def _may_read_event(self, who: Principal, event: dict) -> bool:
        """Audit events: only one's own. Events about a queue's jobs: those who may submit to or
        administer the queue (a team sees its queue's decisions). Queue state events: everyone."""
        if event.get("type") == "Audit":
            return event.get("user") == who.user
        queue = ((event.get("metadata") or {}).get("labels") or {}).get("lahar.dev/queue")
        if queue is None or not ((event.get("metadata") or {}).get("labels") or {}).get("lahar.dev/job"):
            return True
        return self.submits(who, queue) or self.administers(who, queue)

    def submits(self, who: Principal, queue: str) -> bool:
        try:
            check_submit(who, queue, self.lookup)
            return True
        except Forbidden:
            return False

    def administers(self, who: Principal, queue: str) -> bool:
        try:
            check_admin(who, queue, self.lookup, "read")
            return True
        except Forbidden:
            return False

    @staticmethod
    def owns(who: Principal, obj: ApiObject | dict) -> bool:
        annotations = (obj.get("metadata") or {}).get("annotations") or {} if isinstance(obj, dict) else obj.annotations
        return annotations.get(OWNER) == who.user


_ = acl_admits  # re-exported for callers that check ACL text directly
