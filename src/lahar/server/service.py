"""The API's behaviour without HTTP: typed writes through admission into the store.

``ApiService`` is what every entry point shares (HTTP routes, the scheduling loop, tests): it
parses a document into its kind's model, runs admission (mutate, then validate against the
cluster as the store holds it), and writes the result with compare-and-swap. Writes are
serialised by one lock so that admission decisions that read the cluster (a parent's deserved
share, a queue's state) cannot race each other inside one server.

Status is a subresource, as in Kubernetes: creating or updating through the main resource
keeps the stored status (a new queue's status is set by admission); ``update_status`` writes it.
"""

from __future__ import annotations

import threading
from typing import Any, Iterable

from lahar.admission import admit_create, admit_delete, admit_update
from lahar.admission.view import LiveView
from lahar.controller.queue import Changes, QueueEvent, apply_action, descendants
from lahar.errors import BadRequest, FieldError, Forbidden, Invalid, NotFound
from lahar.model.base import ApiObject
from lahar.model.job import JOB_NAME
from lahar.model.manifest import KINDS, parse_object
from lahar.model.queue import DEFAULT, ROOT, Queue, QueueAction
from lahar.security import Principal
from lahar.server.access import Access
from lahar.store.base import watch_through

__all__ = ["ApiService", "MirrorView", "EVENT_KIND"]

EVENT_KIND = "LaharEvent"
_ACTIONS = tuple(action.value for action in QueueAction)  # what ``queue_action`` carries out


class MirrorView(LiveView):
    """What admission reads, kept in memory and brought up to date from the store's watch:
    admission of a job reads O(1) instead of listing every podgroup in the store.

    Of a podgroup it keeps the queue and phase only, read from the stored document as
    ``PodGroup.queue`` and ``status.phase`` read them: the control loop writes each podgroup
    several times per job, and a full parse of each write took a tenth of a request's work."""

    def __init__(self, store: Any) -> None:
        super().__init__()
        self.store = store
        self.version = store.current_version()
        for item in store.list("Queue")[0]:
            self.put(KINDS["Queue"].model_validate(item))
        for item in store.list("PodGroup")[0]:
            self.put_group(*_group_fields(item))

    def sync(self) -> None:
        events, self.version = watch_through(self.store, self.version, {"Queue", "PodGroup"})
        for event in events:
            if event.kind == "PodGroup":
                key, queue, phase = _group_fields(event.object)
                if event.type == "DELETED":
                    self.remove_group(key)
                else:
                    self.put_group(key, queue, phase)
                continue
            obj = KINDS[event.kind].model_validate(event.object)
            if event.type == "DELETED":
                self.remove(obj)
            else:
                self.put(obj)


def _group_fields(document: dict) -> tuple[str, str, str | None]:
    """A stored podgroup's key, queue (``DEFAULT`` when unset, as ``PodGroup.queue``) and phase
    (None when unset)."""
    meta = document.get("metadata") or {}
    spec, status = document.get("spec") or {}, document.get("status") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}", spec.get("queue") or DEFAULT, status.get("phase")


class ApiService:
    def __init__(self, store: Any, clock=None) -> None:
        import time

        self.store = store
        self.clock = clock or time.time
        self.lock = threading.RLock()
        with self.lock:
            self._ensure_builtin_queues()
            self.mirror = MirrorView(store)
        self._view_forgotten = False
        self.access = Access(lambda name: self.mirror.queue(name), self._stored_group)

    def _stored_group(self, key: str) -> dict | None:
        try:
            return self.store.get("PodGroup", key)
        except NotFound:
            return None

    # ----------------------------------------------------------------- reads

    def get(self, kind: str, key: str, who: Principal | None = None) -> dict:
        obj = self.store.get(kind, key)
        if not self.access.may_read(who, obj):
            raise Forbidden(f"{who.describe()} may not read {kind} {key}: it is not theirs and they do not administer its queue")
        return obj

    def exists(self, kind: str, key: str) -> bool:
        try:
            self.store.get(kind, key)
            return True
        except NotFound:
            return False

    def list(self, kind: str, namespace: str | None = None, labels: dict[str, str] | None = None, who: Principal | None = None) -> tuple[list[dict], int]:
        items, version = self.store.list(kind, namespace, labels)
        if who is not None and not who.admin:
            self.view()
            items = [item for item in items if self.access.may_read(who, item)]
        return items, version

    def objects(self, kind: str) -> list[ApiObject]:
        cls = KINDS[kind]
        return [cls.model_validate(item) for item in self.store.list(kind)[0]]

    def view(self) -> MirrorView:
        """What admission may know: every queue, and each queue's unfinished podgroups, as stored now."""
        # Always under the lock: an unlocked sync (a watch stream, a non-admin list) racing the
        # writer's own sync can move ``mirror.version`` back past writes the mirror has read,
        # and the writer's "is the mirror ahead of the store" check after an undone write then
        # keeps what was undone.
        with self.lock:
            if self._view_forgotten:
                self.mirror = MirrorView(self.store)
                self._view_forgotten = False
            self.mirror.sync()
            return self.mirror

    def forget_view(self) -> None:
        """Admission's mirror may have read writes that were then undone (it follows the store's
        versions, which the undone writes used, and later writes use again): it is read again
        from the store when next asked for. Called with the lock held."""
        self._view_forgotten = True

    # ----------------------------------------------------------------- writes

    def create(self, document: dict, namespace: str | None = None, who: Principal | None = None) -> dict:
        obj = self._parse(document, namespace)
        # Admission reads the cluster inside the write's transaction: nothing another server
        # writes can come between what it read and the write (and one transaction, not two)
        with self.lock, self.store.batch():  # the object and its audit event: one disk sync
            view = self.view()
            self.access.create(who, obj)
            admitted = admit_create(obj, view)
            created = self.store.create(admitted.dump(), owned=True)
            self.audit(who, "create", created)
            return created

    def update(self, document: dict, namespace: str | None = None, who: Principal | None = None) -> dict:
        obj = self._parse(document, namespace)
        with self.lock, self.store.batch():  # admission's reads and the writes: one transaction
            stored = self.store.get(obj.kind, obj.key)
            view = self.view()
            self.access.change(who, stored, "update")
            old = KINDS[obj.kind].model_validate(stored)
            self.access.move(who, obj, old)
            self.access.keep_owner(who, obj, old)
            _keep_status(obj, old)
            admitted = admit_update(old, obj, view)
            body = admitted.dump()
            body["metadata"]["resourceVersion"] = obj.metadata.resource_version
            written = self.store.update(body)
            if isinstance(old, Queue) and admitted.desired_state != old.desired_state:
                self._queue_action(old.name, _action_for(admitted.desired_state), "spec.state updated")
            self.audit(who, "update", written)
            return self.store.get(obj.kind, obj.key) if isinstance(old, Queue) else written

    def patch(self, kind: str, key: str, patch: dict, who: Principal | None = None) -> dict:
        """A JSON merge patch (RFC 7386) of the stored object, through the same admission as
        ``update``. Taken under the write lock, so it cannot lose a race with the control loop's
        status writes unless the patch itself names a ``metadata.resourceVersion``."""
        if not isinstance(patch, dict):
            raise BadRequest("the request body must be a JSON object (a merge patch)")
        with self.lock:
            stored = self.store.get(kind, key)
            merged = merge_patch(stored, patch)
            meta = merged.setdefault("metadata", {}) if isinstance(merged.get("metadata"), dict) else None
            if meta is None:
                raise BadRequest("metadata: must be an object")
            if meta.get("name") != stored["metadata"]["name"] or meta.get("namespace") != stored["metadata"].get("namespace"):
                raise BadRequest("metadata.name and metadata.namespace cannot be changed by a patch")
            if (patch.get("metadata") or {}).get("resourceVersion") is None:
                meta["resourceVersion"] = stored["metadata"].get("resourceVersion")
            return self.update(merged, stored["metadata"].get("namespace"), who)

    def update_status(self, document: dict, owned: bool = False) -> dict:
        """Write an object whole, status included (controllers and the scheduler only);
        ``owned`` as for ``Store.update``."""
        with self.lock:
            return self.store.update(document, owned)

    def delete(self, kind: str, key: str, who: Principal | None = None) -> dict:
        with self.lock, self.store.batch():  # a queue goes with its descendants, a vcjob with its pods, or nothing goes
            stored = self.store.get(kind, key)
            view = self.view()
            self.access.change(who, stored, "delete")
            if kind not in KINDS:
                return self.store.delete(kind, key)
            obj = KINDS[kind].model_validate(stored)
            admit_delete(obj, view)
            if isinstance(obj, Queue):
                queues = {q.name: q for q in view.queues()}
                for child in descendants(queues, obj.name):
                    self.store.delete("Queue", child.name)
            if kind == "Job":
                self._delete_job_children(obj)
            deleted = self.store.delete(kind, key)
            self.audit(who, "delete", deleted)
            return deleted

    def _delete_job_children(self, job: ApiObject) -> None:
        """A vcjob owns its PodGroup and Pods (label ``volcano.sh/job-name``): they go with it."""
        for kind in ("Pod", "PodGroup"):
            for item in self.store.list(kind, job.metadata.namespace, {JOB_NAME: job.name})[0]:
                meta = item["metadata"]
                try:
                    self.store.delete(kind, f"{meta.get('namespace') or 'default'}/{meta['name']}")
                except NotFound:
                    pass

    # ----------------------------------------------------------------- queue actions

    def queue_action(self, name: str, action: str, reason: str = "", who: Principal | None = None) -> list[QueueEvent]:
        """Open / close / suspend / resume a queue now (and its descendants first)."""
        if action not in _ACTIONS:
            raise BadRequest(f'action: Unsupported value: "{action}": supported values: {", ".join(_ACTIONS)}')
        with self.lock:
            with self.store.batch():  # what it reads and writes, one transaction (a refusal's warning event too)
                stored = self.store.get("Queue", name)
                self.view()
                self.access.change(who, stored, action)
                events = self._queue_action(name, action, reason)
                refused = [e for e in events if e.queue == name and e.type == "Warning"]
                if not refused:
                    self.audit(who, action, stored)
            if refused:
                raise Invalid("Queue", name, [FieldError.forbidden("action", refused[0].message)])
            return events

    def _queue_action(self, name: str, action: str, reason: str) -> list[QueueEvent]:
        view = self.view()
        queues = {q.name: q for q in view.queues()}
        changes: Changes = apply_action(queues, name, action, view.unfinished_podgroups)
        for queue in changes.queues.values():
            self._write_whole(queue)
        self.record_events(changes.events)
        return changes.events

    def _write_whole(self, obj: ApiObject) -> dict:
        body = obj.dump()
        body["metadata"].pop("resourceVersion", None)
        return self.store.update(body)

    def record_events(self, events: Iterable[QueueEvent]) -> None:
        """Keep events as objects (kind LaharEvent), listed by ``lahar get events``."""
        for event in events:
            self.store.create(
                {
                    "apiVersion": "lahar.dev/v1alpha1",
                    "kind": EVENT_KIND,
                    "metadata": {"generateName": f"{event.queue}-"},
                    "involvedObject": {"kind": "Queue", "name": event.queue},
                    "type": event.type,
                    "reason": event.reason,
                    "message": event.message,
                    "timestamp": self.clock(),
                }
            )

    def audit(self, who: Principal | None, verb: str, obj: dict) -> None:
        """An audit event for a change: who did what to which object, and when."""
        if obj.get("kind") == EVENT_KIND:
            return
        meta = obj.get("metadata") or {}
        name = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
        event = {
            "apiVersion": "lahar.dev/v1alpha1",
            "kind": EVENT_KIND,
            "involvedObject": {"kind": obj.get("kind"), "name": name},
            "type": "Audit",
            "reason": verb,
            "message": f"{who.describe() if who else 'anonymous (authentication off)'} {verb} {obj.get('kind')} {name}",
            "timestamp": self.clock(),
        }
        if who is not None:  # nobody is known without authentication: no ``user``, never a null
            event["user"] = who.user
        # every audit record's name is drawn from one stem: a name taken is drawn again by the store
        self.store.create({**event, "metadata": {"generateName": "audit-"}}, owned=True)

    # ----------------------------------------------------------------- helpers

    def parse(self, document: dict, namespace: str | None = None) -> ApiObject:
        """The typed object a request body describes (no admission, nothing stored)."""
        return self._parse(document, namespace)

    def _parse(self, document: dict, namespace: str | None) -> ApiObject:
        if not isinstance(document, dict):
            raise BadRequest("the request body must be a JSON object")
        obj = parse_object(document)
        if obj.NAMESPACED and namespace is not None:
            if obj.metadata.namespace not in (None, "default", namespace) and document.get("metadata", {}).get("namespace"):
                raise Invalid(obj.kind, obj.name, [_namespace_mismatch(obj, namespace)])
            obj.metadata.namespace = namespace
        return obj

    def _ensure_builtin_queues(self) -> None:
        from lahar.admission import builtin_queue

        for name in (ROOT, DEFAULT):
            try:
                self.store.get("Queue", name)
            except NotFound:
                self.store.create(builtin_queue(name).dump())


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, ``null`` removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = merge_patch(out.get(name), value)
    return out


def _keep_status(new: ApiObject, old: ApiObject) -> None:
    """Status is the controllers' to write, except a Node's: its capacity is what the admin registers."""
    if old.kind == "Node":
        return
    if "status" in type(old).model_fields and "status" in type(new).model_fields:  # a declared status (an unknown one is kept as given)
        new.status = old.status.model_copy(deep=True)  # type: ignore[attr-defined]


def _action_for(desired: str) -> str:
    return {"Open": "OpenQueue", "Closed": "CloseQueue", "Suspended": "SuspendQueue"}[desired]


def _namespace_mismatch(obj: ApiObject, namespace: str):
    return FieldError.invalid("metadata.namespace", obj.metadata.namespace, f"does not match the request's namespace {namespace}")
