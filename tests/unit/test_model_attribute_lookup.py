"""Lahar's models read their fields through the interpreter's plain attribute lookup, not
pydantic's ``__getattr__`` hook (``lahar.model.base.plain_attribute_lookup``), and behave as
pydantic's models do: unknown fields kept for the round trip, a missing attribute an
AttributeError, private attributes where a model has them."""

from __future__ import annotations

import ctypes

import pytest
from pydantic import BaseModel, PrivateAttr

from lahar.model.manifest import KINDS
from lahar.model.base import _GENERIC_LOOKUP, _LOOKUP_SLOT, K8sModel, ObjectMeta, plain_attribute_lookup
from lahar.model.workload import Pod, PodGroup

needs_cpython = pytest.mark.skipif(_GENERIC_LOOKUP is None, reason="this interpreter's types are left as they are")


def _lookup(cls: type) -> int | None:
    return ctypes.c_void_p.from_address(id(cls) + _LOOKUP_SLOT).value


def _models() -> list[type[K8sModel]]:
    """Every model class reached from the kinds, through their fields."""
    seen: list[type[K8sModel]] = []
    todo: list[type] = [*KINDS.values(), ObjectMeta]
    while todo:
        cls = todo.pop()
        if not (isinstance(cls, type) and issubclass(cls, K8sModel)) or cls in seen:
            continue
        seen.append(cls)
        for field in cls.model_fields.values():
            todo.extend(_types_in(field.annotation))
    return seen


def _types_in(annotation) -> list:
    args = getattr(annotation, "__args__", None)
    return [annotation] if args is None else [t for a in args for t in _types_in(a)]


@needs_cpython
def test_every_model_has_the_plain_lookup():
    models = _models()
    assert Pod in models and ObjectMeta in models and len(models) > 10
    slow = [cls.__name__ for cls in models if _lookup(cls) != _GENERIC_LOOKUP]
    assert slow == []
    assert _lookup(BaseModel) != _GENERIC_LOOKUP  # pydantic's own class is left as it is


@needs_cpython
def test_fields_unknown_fields_and_missing_attributes():
    pod = Pod.model_validate({"metadata": {"name": "a", "color": "red"}, "spec": {"nodeName": "n1"}, "extraTop": 1})
    assert pod.metadata.name == "a" and pod.spec.node_name == "n1" and pod.key == "default/a"
    assert pod.metadata.__pydantic_extra__ == {"color": "red"}
    dumped = pod.dump()
    assert dumped["metadata"]["color"] == "red" and dumped["extraTop"] == 1
    assert Pod.model_validate(dumped) == pod
    with pytest.raises(AttributeError, match="nothing_here"):
        pod.nothing_here  # noqa: B018
    assert getattr(pod, "nothing_here", "default") == "default"
    copied = pod.model_copy(update={"extraTop": 2})
    assert copied.dump()["extraTop"] == 2 and pod.dump()["extraTop"] == 1


@needs_cpython
def test_a_model_with_private_attributes_keeps_the_hook():
    class WithPrivate(K8sModel):
        name: str = ""
        _secret: int = PrivateAttr(default=7)

    obj = WithPrivate(name="x")
    assert _lookup(WithPrivate) != _GENERIC_LOOKUP
    assert obj._secret == 7 and obj.name == "x"
    assert plain_attribute_lookup(WithPrivate) is False


@needs_cpython
def test_a_model_with_its_own_getattr_keeps_it():
    class Answering(K8sModel):
        name: str = ""

        def __getattr__(self, item: str):
            return f"asked {item}"

    assert _lookup(Answering) != _GENERIC_LOOKUP
    assert Answering(name="x").anything == "asked anything"


@needs_cpython
def test_a_subclass_made_later_gets_it_too():
    class Later(PodGroup):
        pass

    group = Later.model_validate({"metadata": {"name": "g"}, "spec": {"queue": "q", "minMember": 2}})
    assert _lookup(Later) == _GENERIC_LOOKUP
    assert group.queue == "q" and group.spec.min_member == 2
