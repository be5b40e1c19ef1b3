"""Common pieces of every API object: the pydantic base, ``metadata``, keys and annotations.

Objects keep Kubernetes' shape and field names (camelCase on the wire, snake_case in Python) so
that a Volcano user's YAML loads unchanged. Fields Lahar does not know are kept, not dropped
(``extra="allow"`` at every level), so a manifest survives a round trip through Lahar intact.

Types here only describe the *shape*. Value rules (ranges, name syntax, quantity syntax, allowed
states) live in ``lahar.admission``, which reports every broken rule at once with its path.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt
from pydantic.alias_generators import to_camel

from lahar.wire import prune

__all__ = [
    "K8sModel",
    "ObjectMeta",
    "OwnerReference",
    "ApiObject",
    "Quantity",
    "ResourceList",
    "StrictInt",
    "StrictBool",
    "GROUP_NAME_ANNOTATIONS",
    "LAHAR_AT",
    "LAHAR_DURATION",
    "PREEMPTABLE",
]

# Pods join a podgroup with either annotation: Volcano's scheduler reads the first,
# SPEC.md names the second.
GROUP_NAME_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
PREEMPTABLE = "volcano.sh/preemptable"
LAHAR_AT = "lahar.dev/at"
LAHAR_DURATION = "lahar.dev/duration"


def _number_to_text(value: Any) -> Any:
    """Quantities may be written as YAML numbers (``cpu: 2``); store them as strings like Kubernetes."""
    if isinstance(value, bool):
        return value  # left for the str check to reject
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if not value.is_integer() else str(int(value))
    return value


Quantity = Annotated[str, BeforeValidator(_number_to_text)]
ResourceList = dict[str, Quantity]


class K8sModel(BaseModel):
    """Base of every object and sub-object: camelCase aliases, unknown fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        strict=False,
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        plain_attribute_lookup(cls)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        """pydantic's ``model_copy``, the shallow kind made in one step: the fields and unknown
        fields in maps of their own, the values shared, ``update`` set without validation (a
        known field in the fields, any other among the unknown ones) and counted as set. The
        control loop copies two or three objects for each write it makes; pydantic's own way
        (``copy.copy`` of each map, then the update) was 8.7% of a busy tick's samples."""
        cls = type(self)
        if deep or self.__pydantic_private__ is not None or cls.model_config.get("extra") != "allow":
            return super().model_copy(update=update, deep=deep)
        values = self.__dict__.copy()
        extra = self.__pydantic_extra__
        extra = None if extra is None else extra.copy()
        fields_set = self.__pydantic_fields_set__.copy()
        if update:
            known = cls.__pydantic_fields__
            for name, value in update.items():
                if name in known:
                    values[name] = value
                else:
                    extra = {} if extra is None else extra
                    extra[name] = value
            fields_set.update(update)
        copied = cls.__new__(cls)
        _set = object.__setattr__
        _set(copied, "__dict__", values)
        _set(copied, "__pydantic_extra__", extra)
        _set(copied, "__pydantic_fields_set__", fields_set)
        _set(copied, "__pydantic_private__", None)
        return copied

    def dump(self) -> dict[str, Any]:
        """The object as plain JSON data, with wire (camelCase) names, without nulls and empty values."""
        return prune(self.model_dump(by_alias=True, exclude_none=True, mode="json"))


# Where a type keeps its attribute lookup (``tp_getattro``) in CPython's type object, the same
# from 3.8 to 3.13: checked on ``object`` before any type is changed (``_GENERIC_LOOKUP``)
_LOOKUP_SLOT: Final = 144


def _generic_lookup() -> int | None:
    """The address of CPython's plain attribute lookup where this interpreter's types keep it at
    ``_LOOKUP_SLOT`` (``object``'s lookup is that very function), else None: then no type is
    changed."""
    if sys.implementation.name != "cpython" or not (3, 8) <= sys.version_info[:2] <= (3, 13) or ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    generic = ctypes.cast(ctypes.pythonapi.PyObject_GenericGetAttr, ctypes.c_void_p).value
    return generic if ctypes.c_void_p.from_address(id(object) + _LOOKUP_SLOT).value == generic else None


_GENERIC_LOOKUP: Final = _generic_lookup()


def plain_attribute_lookup(cls: type[BaseModel]) -> bool:
    """Give the model class the interpreter's plain attribute lookup; True if it has it now.

    pydantic defines ``BaseModel.__getattr__`` (for private attributes, and for unknown fields
    read as attributes). Any ``__getattr__`` makes CPython route *every* attribute read through
    a slower hook, and stops the interpreter from specialising the read (measured: 77 ns a read
    against 18), and a busy server tick reads a pydantic field about two thousand times a job.
    Lahar's models have no private attributes and never read an unknown field as an attribute
    (unknown fields are kept for the round trip: ``model_dump`` and ``__pydantic_extra__``), so
    the hook only costs. A class with private attributes, its own ``__getattr__`` or
    ``__getattribute__``, or an interpreter whose types are not laid out as expected, is left as
    it is. A later change to the class's special methods puts the hook back (CPython works
    the slot out again): it only gets slower."""
    generic = _GENERIC_LOOKUP
    if generic is None or cls.__private_attributes__:
        return False
    if cls.__getattr__ is not BaseModel.__getattr__ or cls.__getattribute__ is not object.__getattribute__:  # type: ignore[attr-defined]
        return False
    ctypes.c_void_p.from_address(id(cls) + _LOOKUP_SLOT).value = generic
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))
    return True


plain_attribute_lookup(K8sModel)


class OwnerReference(K8sModel):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str | None = None
    controller: StrictBool | None = None
    block_owner_deletion: StrictBool | None = None


class ObjectMeta(K8sModel):
    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: StrictInt | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)


class ApiObject(K8sModel):
    """An object with ``apiVersion``, ``kind`` and ``metadata``. Subclasses fix the first two."""

    API_VERSION: ClassVar[str] = ""
    KIND: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = True

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def model_post_init(self, context: Any) -> None:
        if not self.api_version:
            self.api_version = self.API_VERSION
        if not self.kind:
            self.kind = self.KIND
        if self.NAMESPACED and not self.metadata.namespace:
            self.metadata.namespace = "default"

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace if self.NAMESPACED else None

    @property
    def key(self) -> str:
        """``namespace/name`` for namespaced objects, ``name`` otherwise."""
        if self.NAMESPACED:
            return f"{self.metadata.namespace}/{self.metadata.name}"
        return self.metadata.name

    @property
    def annotations(self) -> dict[str, str]:
        return self.metadata.annotations
