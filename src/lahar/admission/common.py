"""Rules shared by every kind: names, metadata, quantities, integer ranges.

Each check appends ``FieldError``s to a list and returns nothing, so that a validator can run
every rule and report every problem at once.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Mapping

from lahar.errors import ErrorType, FieldError
from lahar.model.base import ObjectMeta
from lahar.quantity import MAX_MAGNITUDE, TOO_LARGE, QuantityError, parse_quantity

__all__ = [
    "check_label_name",
    "check_subdomain_name",
    "check_metadata",
    "check_resource_list",
    "check_int_range",
    "resource_values",
    "INT32_MAX",
]

INT32_MAX = 2**31 - 1
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_RULE = (
    "must be a lowercase RFC 1123 label: at most 63 characters, lower case letters, digits and '-', "
    "starting and ending with a letter or digit (e.g. 'my-queue')"
)
_SUBDOMAIN_RULE = (
    "must be a lowercase RFC 1123 subdomain: at most 253 characters, lower case letters, digits, "
    "'-' and '.', starting and ending with a letter or digit (e.g. 'example.com')"
)
_RESOURCE_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def check_label_name(errors: list[FieldError], path: str, name: str | None) -> None:
    if not name:
        errors.append(FieldError.required(path, "a name is required"))
    elif len(name) > 63 or not _LABEL.match(name):
        errors.append(FieldError.invalid(path, name, _LABEL_RULE))


def check_subdomain_name(errors: list[FieldError], path: str, name: str | None) -> None:
    if not name:
        errors.append(FieldError.required(path, "a name is required"))
    elif len(name) > 253 or not _SUBDOMAIN.match(name):
        errors.append(FieldError.invalid(path, name, _SUBDOMAIN_RULE))


MAX_LABELS = 64
MAX_ANNOTATION_BYTES = 256 * 1024


def check_metadata(errors: list[FieldError], meta: ObjectMeta, *, label_name: bool, namespaced: bool) -> None:
    """Name (label or subdomain syntax; may be empty when ``generateName`` is set), namespace,
    and bounded labels and annotations."""
    check = check_label_name if label_name else check_subdomain_name
    if meta.name or not meta.generate_name:
        check(errors, "metadata.name", meta.name)
    elif len(meta.generate_name) > 58:
        errors.append(FieldError.invalid("metadata.generateName", meta.generate_name, "must be at most 58 characters"))
    if namespaced:
        check_label_name(errors, "metadata.namespace", meta.namespace)
    for field, values in (("labels", meta.labels), ("annotations", meta.annotations)):
        if len(values) > MAX_LABELS:
            errors.append(FieldError(f"metadata.{field}", ErrorType.TOO_LONG, f"must have at most {MAX_LABELS} entries (has {len(values)})"))
        for key in values:
            if len(key) > 253 or not key:
                errors.append(FieldError.invalid(f"metadata.{field}", key, "keys must be 1 to 253 characters"))
    for key, value in meta.labels.items():
        if len(value) > 63:
            errors.append(FieldError.invalid(f"metadata.labels[{key}]", value, "must be at most 63 characters"))
    if sum(len(k) + len(v) for k, v in meta.annotations.items()) > MAX_ANNOTATION_BYTES:
        errors.append(FieldError("metadata.annotations", ErrorType.TOO_LONG, f"must total at most {MAX_ANNOTATION_BYTES} bytes"))


def check_resource_list(errors: list[FieldError], path: str, values: Mapping[str, str] | None) -> None:
    """Every name well-formed, every quantity valid, >= 0 and at most 2^63-1."""
    for name, text in (values or {}).items():
        if not _RESOURCE_NAME.match(name):
            errors.append(FieldError.invalid(f"{path}.{name}", name, "must be a resource name such as cpu, memory or nvidia.com/gpu"))
            continue
        try:
            value = parse_quantity(text)
        except QuantityError:
            errors.append(
                FieldError.invalid(
                    f"{path}.{name}",
                    text,
                    "must be a quantity such as 500m, 2, 1.5, 4Gi or 1e3",
                )
            )
            continue
        if value < 0:
            errors.append(FieldError.invalid(f"{path}.{name}", text, "must be greater than or equal to 0"))
        elif value > MAX_MAGNITUDE:
            errors.append(FieldError.invalid(f"{path}.{name}", text, TOO_LARGE))


def check_int_range(errors: list[FieldError], path: str, value: int | None, low: int, high: int) -> None:
    if value is not None and not low <= value <= high:
        errors.append(FieldError.invalid(path, value, f"must be in {low}..{high}"))


def resource_values(values: Mapping[str, str] | None) -> dict[str, Fraction]:
    """Exact values of the well-formed quantities in a resource list (bad ones are skipped)."""
    out = {}
    for name, text in (values or {}).items():
        try:
            out[name] = parse_quantity(text)
        except QuantityError:
            continue
    return out
