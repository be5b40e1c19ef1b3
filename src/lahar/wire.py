"""The wire form of objects: plain JSON data without empty values.

Why a module of its own: every object the server writes (a submit, each bind and status the
control loop writes) is dumped and pruned here, about ten times per job, so it is compiled
with the scheduling core (mypyc) when Lahar is installed; the same source runs as plain Python
otherwise.
"""

from __future__ import annotations

from typing import Any


def prune(value: Any) -> Any:
    """Drop empty strings, maps and lists from maps, recursively (they carry no meaning in a
    manifest); list items stay as they are, pruned inside. Only maps and lists are walked."""
    if isinstance(value, dict):
        return _prune_map(value)
    if isinstance(value, list):
        return _prune_list(value)
    return value


def _prune_map(value: dict) -> dict:
    out: dict = {}
    for key, item in value.items():
        if isinstance(item, dict):
            item = _prune_map(item)
            if not item:
                continue
        elif isinstance(item, list):
            item = _prune_list(item)
            if not item:
                continue
        elif isinstance(item, str) and not item:
            continue
        out[key] = item
    return out


def _prune_list(value: list) -> list:
    out: list = []
    for item in value:
        if isinstance(item, dict):
            out.append(_prune_map(item))
        elif isinstance(item, list):
            out.append(_prune_list(item))
        else:
            out.append(item)
    return out
