"""Admission rules of SPEC section 4, one table per rule family.

Each row is (what the user sends, the cluster it lands in, the field errors expected). An empty
expectation means the write is admitted.
"""

import pytest
from builders import command, job, node, podgroup, priority_class, queue

from lahar.admission import ObjectsView, admit_create, admit_delete, admit_update
from lahar.errors import Invalid


def view(*objects):
    return ObjectsView([o.build() if hasattr(o, "build") else o for o in objects])


def errors_of(fn, *args):
    try:
        fn(*args)
    except Invalid as exc:
        return [str(e) for e in exc.errors]
    return []


def paths_of(fn, *args):
    try:
        fn(*args)
    except Invalid as exc:
        return [e.path for e in exc.errors]
    return []


# ----------------------------------------------------------------------------- queue create


def test_queue_defaults():
    q = admit_create(queue("a").build(), view())
    assert (q.spec.weight, q.spec.reclaimable, q.spec.parent, q.status.state, q.spec.state) == (1, True, "root", "Open", "Open")


@pytest.mark.parametrize(
    "builder,expected",
    [
        (queue("ok").weight(1), []),
        (queue("ok").weight(2**31 - 1), []),
        (queue("a").weight(0), ["spec.weight: Invalid value: 0: must be in 1..2147483647"]),
        (queue("a").weight(2**31), ["spec.weight: Invalid value: 2147483648: must be in 1..2147483647"]),
        (queue("a").weight(-3), ["spec.weight: Invalid value: -3: must be in 1..2147483647"]),
        (queue("a").priority(-1), ["spec.priority: Invalid value: -1: must be in 0..2147483647"]),
        (queue("Bad_Name"), ["metadata.name"]),
        (queue("a" * 64), ["metadata.name"]),
        (queue("-a"), ["metadata.name"]),
        (queue("a").capability(cpu="-1"), ['spec.capability.cpu: Invalid value: "-1": must be greater than or equal to 0']),
        (queue("a").deserved(memory="4Xi"), ["spec.deserved.memory"]),
        (queue("a").guarantee(cpu="x"), ["spec.guarantee.resource.cpu"]),
        (queue("a").state("Closing"), ['spec.state: Unsupported value: "Closing": supported values: "Open", "Closed", "Suspended"']),
        (queue("a").state("Unknown"), ["spec.state"]),
        (queue("a").state("Closed"), []),
        (queue("a").state("Suspended"), []),
        (queue("a").guarantee(cpu=3).deserved(cpu=2), ['spec.deserved.cpu: Invalid value: "2": must be >= guarantee[cpu]=3']),
        (queue("a").deserved(cpu=3).capability(cpu=2), ['spec.deserved.cpu: Invalid value: "3": must be <= capability[cpu]=2']),
        (queue("a").guarantee(cpu=3).capability(cpu=2), ["spec.guarantee.resource.cpu: Invalid value: \"3\": must be <= capability[cpu]=2"]),
        (queue("a").guarantee(cpu=1).deserved(cpu=2).capability(cpu=3, memory="1Gi"), []),
        (queue("a").deserved(memory="2Gi").capability(memory="1Gi"), ['spec.deserved.memory: Invalid value: "2Gi": must be <= capability[memory]=1Gi']),
    ],
)
def test_queue_field_rules(builder, expected):
    got = errors_of(admit_create, builder.build(), view())
    if expected and ":" not in expected[0]:
        got = [e.split(":")[0] for e in got]
    assert got == expected


def test_every_field_error_at_once():
    bad = queue("Bad_Name").weight(0).capability(cpu="-1", memory="4Xi").state("Foo")
    assert paths_of(admit_create, bad.build(), view()) == [
        "metadata.name",
        "spec.weight",
        "spec.state",
        "spec.capability.cpu",
        "spec.capability.memory",
    ]


def test_closed_state_on_create_is_honoured():
    q = admit_create(queue("a").state("Closed").build(), view())
    assert q.status.state == "Closed"


def test_volcano_style_status_state_is_read_as_desired():
    q = admit_create(queue("a").status("Suspended").build(), view())
    assert (q.spec.state, q.status.state) == ("Suspended", "Suspended")


# ----------------------------------------------------------------------------- hierarchy


PARENT = queue("p").deserved(cpu=4).guarantee(cpu=2).capability(cpu=8)


@pytest.mark.parametrize(
    "builder,cluster,expected",
    [
        (queue("c").parent("p"), [PARENT], []),
        (queue("c").parent("nope"), [], ['spec.parent: Not found: "nope": parent queue nope does not exist']),
        (queue("c").parent("c"), [], ['spec.parent: Invalid value: "c": a queue cannot be its own parent']),
        (queue("c").parent("p").capability(cpu=9), [PARENT], ['spec.capability.cpu: Invalid value: "9": must be <= capability[cpu]=8 of ancestor queue p']),
        (
            queue("c").parent("mid").capability(cpu=9),
            [PARENT, queue("mid").parent("p")],
            ['spec.capability.cpu: Invalid value: "9": must be <= capability[cpu]=8 of ancestor queue p'],
        ),
        (
            queue("c").parent("p").deserved(cpu=3),
            [PARENT, queue("s").parent("p").deserved(cpu=2)],
            ['spec.deserved.cpu: Invalid value: "3": children of p would have deserved 5 in total, more than its deserved 4'],
        ),
        (
            queue("c").parent("p").deserved(cpu=2).guarantee(cpu=2),
            [PARENT, queue("s").parent("p").deserved(cpu=1).guarantee(cpu=1)],
            ['spec.guarantee.resource.cpu: Invalid value: "2": children of p would have guarantee 3 in total, more than its guarantee 2'],
        ),
        (queue("c").parent("p").deserved(cpu=2), [PARENT, queue("s").parent("p").deserved(cpu=2)], []),
        (queue("c").parent("p"), [PARENT, podgroup("pg").queue("p")], ['spec.parent: Invalid value: "p": queue p holds jobs (1 unfinished podgroups); only leaf queues hold jobs']),
        (queue("c").parent("p"), [PARENT, podgroup("pg").queue("p").phase("Completed")], []),
        (queue("c").parent("p"), [PARENT.state("Closed")], ['spec.state: Invalid value: "Open": parent queue p is Closed; open the parent first']),
        (queue("c").parent("p").state("Closed"), [queue("p").state("Closed")], []),
    ],
)
def test_hierarchy_rules_on_create(builder, cluster, expected):
    world, _ = _world(*cluster)
    assert errors_of(admit_create, builder.build(), world) == expected


def _world(*builders):
    objs = []
    for b in builders:
        obj = b.build()
        if obj.kind == "Queue":
            obj = admit_create(obj, ObjectsView(objs))
        objs.append(obj)
    return ObjectsView(objs), {o.name: o for o in objs}


def test_reparent_under_own_descendant_is_a_cycle():
    world, objs = _world(queue("a"), queue("b").parent("a"), queue("c").parent("b"))
    moved = objs["a"].model_copy(deep=True)
    moved.spec.parent = "c"
    assert errors_of(admit_update, objs["a"], moved, world) == ['spec.parent: Invalid value: "c": would make a cycle: a -> c -> b -> a']


def test_parent_capability_below_descendants_is_rejected():
    world, objs = _world(queue("p").capability(cpu=8), queue("c").parent("p").capability(cpu=6))
    smaller = objs["p"].model_copy(deep=True)
    smaller.spec.capability = {"cpu": "4"}
    assert errors_of(admit_update, objs["p"], smaller, world) == [
        'spec.capability.cpu: Invalid value: "4": must be >= capability[cpu]=6 of descendant queue c'
    ]


def test_parent_deserved_below_children_sum_is_rejected():
    world, objs = _world(queue("p").deserved(cpu=4), queue("c1").parent("p").deserved(cpu=2), queue("c2").parent("p").deserved(cpu=2))
    smaller = objs["p"].model_copy(deep=True)
    smaller.spec.deserved = {"cpu": "3"}
    assert errors_of(admit_update, objs["p"], smaller, world) == [
        "spec.deserved.cpu: Invalid value: \"3\": must be >= the sum of its children's deserved (4)"
    ]


# ----------------------------------------------------------------------------- lifecycle via update


def _with_state(q, desired):
    new = q.model_copy(deep=True)
    new.spec.state = desired
    return new


@pytest.mark.parametrize(
    "current,desired,expected",
    [
        ("Open", "Suspended", []),
        ("Open", "Closed", []),
        ("Suspended", "Open", []),
        ("Closed", "Open", []),
        ("Closed", "Suspended", ["spec.state: Invalid value: \"Suspended\": queue q is Closed: a Closed queue's life has ended: open it first"]),
        ("Closing", "Suspended", []),
    ],
)
def test_state_changes_follow_the_lifecycle_table(current, desired, expected):
    world, objs = _world(queue("q").state("Closed" if current == "Closing" else current))
    old = objs["q"]
    old.status.state = current
    assert errors_of(admit_update, old, _with_state(old, desired), world) == expected


def test_root_can_never_be_closed_or_suspended():
    world = ObjectsView()
    root = world.queue("root")
    for desired in ("Closed", "Suspended"):
        assert errors_of(admit_update, root, _with_state(root, desired), world) == [
            f'spec.state: Invalid value: "{desired}": the root queue can never be closed or suspended'
        ]


def test_root_resources_cannot_be_edited():
    world = ObjectsView()
    root = world.queue("root")
    edited = root.model_copy(deep=True)
    edited.spec.capability = {"cpu": "1"}
    assert paths_of(admit_update, root, edited, world) == ["spec"]


def test_opening_a_child_under_a_closed_parent_is_rejected():
    world, objs = _world(queue("p").state("Closed"), queue("c").parent("p").state("Closed"))
    assert errors_of(admit_update, objs["c"], _with_state(objs["c"], "Open"), world) == [
        'spec.state: Invalid value: "Open": parent queue p is Closed; open the parent first'
    ]


def test_quota_edits_are_allowed_in_every_state():
    for state in ("Open", "Closed", "Suspended"):
        world, objs = _world(queue("q").state(state).weight(1))
        edited = objs["q"].model_copy(deep=True)
        edited.spec.weight = 7
        edited.spec.capability = {"cpu": "3"}
        assert errors_of(admit_update, objs["q"], edited, world) == []


# ----------------------------------------------------------------------------- delete


@pytest.mark.parametrize(
    "name,state,expected",
    [
        ("default", "Closed", ["metadata.name: Forbidden: the default queue can never be deleted"]),
        ("q", "Open", ['status.state: Invalid value: "Open": only a Closed queue can be deleted; close it first (lahar queue operate -n q -a close)']),
        ("q", "Suspended", ["status.state"]),
        ("q", "Closed", []),
    ],
)
def test_delete_rules(name, state, expected):
    world, objs = _world(queue(name).state(state))
    got = errors_of(admit_delete, objs[name], world)
    if expected and ":" not in expected[0]:
        got = [e.split(":")[0] for e in got]
    assert got == expected


def test_root_cannot_be_deleted():
    world = ObjectsView()
    assert errors_of(admit_delete, world.queue("root"), world) == ["metadata.name: Forbidden: the root queue can never be deleted"]


# ----------------------------------------------------------------------------- jobs and podgroups


@pytest.mark.parametrize(
    "state,expected",
    [
        ("Open", []),
        ("Suspended", []),
        ("Closed", ['spec.queue: Invalid value: "q": queue q is Closed and accepts no new jobs']),
        ("Closing", ['spec.queue: Invalid value: "q": queue q is Closing and accepts no new jobs']),
        ("Unknown", ['spec.queue: Invalid value: "q": queue q is Unknown and accepts no new jobs']),
    ],
)
def test_job_placement_by_queue_state(state, expected):
    world, objs = _world(queue("q"))
    objs["q"].status.state = state
    assert errors_of(admit_create, job("j").queue("q").tasks(2, cpu=1).build(), world) == expected
    assert errors_of(admit_create, podgroup("pg").queue("q").build(), world) == expected


def test_job_queue_must_exist_be_a_leaf_and_not_root():
    world, _ = _world(queue("p"), queue("c").parent("p"))
    assert errors_of(admit_create, job("j").queue("nope").tasks(1).build(), world) == ['spec.queue: Not found: "nope": queue nope does not exist']
    assert errors_of(admit_create, job("j").queue("p").tasks(1).build(), world) == [
        'spec.queue: Invalid value: "p": queue p has child queues (c); only leaf queues take jobs'
    ]
    assert errors_of(admit_create, job("j").queue("root").tasks(1).build(), world) == [
        'spec.queue: Invalid value: "root": jobs cannot be submitted to the root queue'
    ]


def test_job_defaults_to_default_queue():
    assert admit_create(job("j").tasks(1).build(), ObjectsView()).spec.queue == "default"


def test_a_new_job_starts_pending_with_every_pod_pending():
    """The status the job controller would write first, set at admission: a job is Pending
    from the moment it is accepted, and the control loop need not write it again until a pod
    of it runs."""
    admitted = admit_create(job("j").tasks(2).tasks(3, name="ps").build(), ObjectsView())
    assert admitted.status.state == {"phase": "Pending"}
    assert (admitted.status.pending, admitted.status.running, admitted.status.succeeded, admitted.status.failed) == (5, 0, 0, 0)


def test_a_job_created_with_a_status_keeps_it():
    built = job("j").tasks(3).build()
    built.status.state = {"phase": "Running"}
    built.status.running = 1
    admitted = admit_create(built, ObjectsView())
    assert admitted.status.state == {"phase": "Running"} and admitted.status.running == 1
    assert admitted.status.pending == 0  # as given: not worked out (it would be 2)


@pytest.mark.parametrize(
    "builder,expected",
    [
        (job("j").tasks(2).min_available(3), ["spec.minAvailable: Invalid value: 3: must be <= the total number of replicas (2)"]),
        (job("j").tasks(2).min_available(-1), ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]),
        (job("j").tasks(1, cpu="-2"), ['spec.tasks[0].template.spec.containers[0].resources.requests.cpu: Invalid value: "-2": must be greater than or equal to 0']),
        (job("j").tasks(1, memory="lots"), ["spec.tasks[0].template.spec.containers[0].resources.requests.memory"]),
        (job("j").tasks(1).tasks(1), ['spec.tasks[1].name: Duplicate value: "worker"']),
        (job("J"), ["metadata.name", "spec.tasks: Required value: a job needs at least one task"]),
        (job("j").tasks(1).annotation("lahar.dev/duration", "soon"), ["metadata.annotations[lahar.dev/duration]"]),
        (job("j").tasks(1).annotation("lahar.dev/duration", "9" * 400), ["metadata.annotations[lahar.dev/duration]"]),
        (job("j").tasks(1, cpu="9" * 400), ["spec.tasks[0].template.spec.containers[0].resources.requests.cpu"]),
        (job("j").tasks(1).annotation("lahar.dev/at", "9" * 400 + "d"), ["metadata.annotations[lahar.dev/at]"]),
    ],
)
def test_job_field_rules(builder, expected):
    got = errors_of(admit_create, builder.build(), ObjectsView())
    assert [g if ":" in e else g.split(":")[0] for g, e in zip(got, expected)] == expected and len(got) == len(expected)


def test_podgroup_rules():
    world = ObjectsView()
    assert errors_of(admit_create, podgroup("pg").min_member(-1).build(), world) == ["spec.minMember: Invalid value: -1: must be in 0..2147483647"]
    assert admit_create(podgroup("pg").build(), world).status.phase == "Pending"


# ----------------------------------------------------------------------------- cluster objects


def test_node_and_priority_class_rules():
    world = ObjectsView()
    assert errors_of(admit_create, node("n1", cpu="-1"), world) == ['status.allocatable.cpu: Invalid value: "-1": must be greater than or equal to 0']
    assert errors_of(admit_create, node("n1", cpu="8Ei"), world) == ['status.allocatable.cpu: Invalid value: "8Ei": must be at most 9223372036854775807 (2^63-1), as in Kubernetes']
    assert errors_of(admit_create, priority_class("high", 10**10), world) == ["value: Invalid value: 10000000000: must be in -2000000000..2000000000"]


@pytest.mark.parametrize(
    "cmd,expected",
    [
        (command("default", "SuspendQueue"), []),
        (command("default", "Explode"), ["action"]),
        (command("nope", "OpenQueue"), ['target.name: Not found: "nope": queue nope does not exist']),
    ],
)
def test_command_rules(cmd, expected):
    got = errors_of(admit_create, cmd, ObjectsView())
    if expected and ":" not in expected[0]:
        got = [g.split(":")[0] for g in got]
    assert got == expected


# ----------------------------------------------------------------------------- job update

_ONLY = "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec` and `PriorityClassName`"
_STORED = job("j").queue("a").tasks(2, cpu="1")


@pytest.mark.parametrize(
    "changed,expected",
    [
        (job("j").queue("a").tasks(2, cpu="1"), []),
        (job("j").queue("a").tasks(5, cpu="1"), []),
        (job("j").queue("a").tasks(0, cpu="1"), []),
        (job("j").queue("a").min_available(2).tasks(2, cpu="1"), []),
        (job("j").queue("a").priority_class("high").tasks(2, cpu="1"), []),
        (job("j").queue("b").tasks(2, cpu="1"), [f"spec: Forbidden: {_ONLY}"]),
        (job("j").queue("a").tasks(2, cpu="2"), [f"spec: Forbidden: {_ONLY}"]),
        (job("j").queue("a").tasks(2, name="renamed", cpu="1"), [f"spec: Forbidden: {_ONLY}"]),
        (job("j").queue("a").tasks(2, cpu="1").tasks(1, name="extra"), ["spec.tasks: Forbidden: job updates may not add or remove tasks"]),
        (job("j").queue("a").min_available(3).tasks(2, cpu="1"), ["spec.minAvailable: Invalid value: 3: must be <= the total number of replicas (2)"]),
    ],
)
def test_a_job_update_changes_only_replicas_min_available_and_priority_class(changed, expected):
    """Volcano's job update rule: the spec stays as created but for those fields (and the queue
    with it, so a job cannot be moved past its queue's state or its ACLs)."""
    world = view(queue("a"), queue("b"))
    assert errors_of(admit_update, _STORED.build(), changed.build(), world) == expected


def test_a_job_update_keeps_its_queue_even_once_that_queue_has_closed():
    world = view(queue("a").state("Closed"))
    assert errors_of(admit_update, _STORED.build(), job("j").queue("a").tasks(4, cpu="1").build(), world) == []
