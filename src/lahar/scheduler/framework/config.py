"""Volcano's scheduler configuration: actions, tiers of plugins with ``enable*`` flags, arguments.

The input format is Volcano's ``volcano-scheduler.conf`` (or the same fields in a
``SchedulerConfiguration`` manifest). Loading follows Volcano's ``UnmarshalSchedulerConf``: every
``enable*`` flag left unset becomes true, except ``enableHierarchy`` (unset means off).
``fill_defaults=False`` keeps unset flags off instead, which is how Volcano's own unit tests
build their tiers by hand.

Volcano spells a few flags ``enabled*`` (``enabledOverused``, ``enabledAllocatable``,
``enabledVictim``); both spellings are accepted for every flag, so a user's typo of one letter
does not silently disable a callback. Unknown actions, plugins or flag names are errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final, Mapping

import yaml

from lahar.errors import BadRequest

__all__ = [
    "PluginOption",
    "Tier",
    "SchedulerConf",
    "Arguments",
    "load_config",
    "default_config_text",
    "named_config_text",
    "FLAGS",
    "KNOWN_ACTIONS",
    "KNOWN_PLUGINS",
]

# internal flag name -> Volcano YAML key
FLAGS: Final = {
    "job_order": "enableJobOrder",
    "hierarchy": "enableHierarchy",
    "job_ready": "enableJobReady",
    "job_pipelined": "enableJobPipelined",
    "task_order": "enableTaskOrder",
    "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable",
    "preemptive": "enablePreemptive",
    "queue_order": "enableQueueOrder",
    "cluster_order": "enabledClusterOrder",
    "predicate": "enablePredicate",
    "best_node": "enableBestNode",
    "node_order": "enableNodeOrder",
    "target_job": "enableTargetJob",
    "reserved_nodes": "enableReservedNodes",
    "job_enqueued": "enableJobEnqueued",
    "victim": "enabledVictim",
    "job_starving": "enableJobStarving",
    "overused": "enabledOverused",
    "allocatable": "enabledAllocatable",
}
_KEY_TO_FLAG: dict[str, str] = {}
for _flag, _key in FLAGS.items():
    _stem = _key.removeprefix("enabled").removeprefix("enable")
    _KEY_TO_FLAG["enable" + _stem] = _flag
    _KEY_TO_FLAG["enabled" + _stem] = _flag

KNOWN_ACTIONS: Final = ("enqueue", "allocate", "backfill", "preempt", "reclaim")
# Plugin names a configuration may use; ``lahar.scheduler.plugins.register`` adds to it.
KNOWN_PLUGINS: list[str] = [
    "priority", "gang", "conformance", "proportion", "capacity", "overcommit", "drf",
    "predicates", "nodeorder", "binpack", "sla",
]  # fmt: skip


class Arguments(dict):
    """Plugin or action arguments with Volcano's typed getters (a bad value keeps the default)."""

    def get_int(self, key: str, default: int) -> int:
        value = self.get(key, default)
        try:
            return int(value) if not isinstance(value, bool) else default
        except (TypeError, ValueError):
            return default

    def get_float(self, key: str, default: float) -> float:
        value = self.get(key, default)
        try:
            return float(value) if not isinstance(value, bool) else default
        except (TypeError, ValueError):
            return default

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return default


@dataclass
class PluginOption:
    name: str
    flags: dict[str, bool | None] = field(default_factory=dict)
    arguments: Arguments = field(default_factory=Arguments)

    def enabled(self, flag: str) -> bool:
        """Volcano's ``isEnabled``: only an explicit (or defaulted) true counts."""
        return self.flags.get(flag) is True

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        for flag, value in self.flags.items():
            if value is not None:
                out[FLAGS[flag]] = value
        if self.arguments:
            out["arguments"] = dict(self.arguments)
        return out


@dataclass
class Tier:
    plugins: list[PluginOption]


@dataclass
class SchedulerConf:
    actions: list[str]
    tiers: list[Tier]
    configurations: dict[str, Arguments] = field(default_factory=dict)

    def action_arguments(self, action: str) -> Arguments:
        return self.configurations.get(action, Arguments())

    def plugin(self, name: str) -> PluginOption | None:
        for tier in self.tiers:
            for option in tier.plugins:
                if option.name == name:
                    return option
        return None

    def to_yaml(self) -> str:
        data: dict[str, Any] = {
            "actions": ", ".join(self.actions),
            "tiers": [{"plugins": [p.to_yaml() for p in tier.plugins]} for tier in self.tiers],
        }
        if self.configurations:
            data["configurations"] = [{"name": k, "arguments": dict(v)} for k, v in self.configurations.items()]
        return yaml.safe_dump(data, sort_keys=False)


def load_config(source: str | Mapping[str, Any], *, fill_defaults: bool = True) -> SchedulerConf:
    """Parse a configuration from YAML text or a mapping. Raises ``BadRequest`` naming the problem."""
    data = _decode(source)
    actions = _parse_actions(data.get("actions"))
    tiers = [_parse_tier(i, tier, fill_defaults) for i, tier in enumerate(data.get("tiers") or [])]
    _check_hierarchy_combinations(tiers)
    configurations: dict[str, Arguments] = {}
    for i, item in enumerate(data.get("configurations") or []):
        if not isinstance(item, Mapping) or not item.get("name"):
            raise BadRequest(f"configurations[{i}]: each entry needs a name and arguments")
        configurations[str(item["name"])] = Arguments(item.get("arguments") or {})
    return SchedulerConf(actions, tiers, configurations)


def _decode(source: str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    try:
        data = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        raise BadRequest(f"scheduler configuration is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise BadRequest("scheduler configuration must be a mapping with actions and tiers")
    return data


def _parse_actions(value: Any) -> list[str]:
    if isinstance(value, list):
        names = [str(v).strip() for v in value]
    else:
        names = [part.strip() for part in str(value or "").split(",")]
    names = [n for n in names if n]
    for name in names:
        if name not in KNOWN_ACTIONS:
            raise BadRequest(f'actions: Unsupported value: "{name}": supported actions: {", ".join(KNOWN_ACTIONS)}')
    return names


def _parse_tier(index: int, tier: Any, fill_defaults: bool) -> Tier:
    if not isinstance(tier, Mapping) or not isinstance(tier.get("plugins"), list):
        raise BadRequest(f"tiers[{index}]: each tier is a mapping with a list of plugins")
    return Tier([_parse_plugin(f"tiers[{index}].plugins[{j}]", p, fill_defaults) for j, p in enumerate(tier["plugins"])])


def _parse_plugin(path: str, data: Any, fill_defaults: bool) -> PluginOption:
    if not isinstance(data, Mapping) or not data.get("name"):
        raise BadRequest(f"{path}: each plugin is a mapping with a name")
    name = str(data["name"])
    if name not in KNOWN_PLUGINS:
        raise BadRequest(f'{path}.name: Unsupported value: "{name}": supported plugins: {", ".join(KNOWN_PLUGINS)}')
    flags: dict[str, bool | None] = {flag: None for flag in FLAGS}
    for key, value in data.items():
        if key in ("name", "arguments"):
            continue
        if key not in _KEY_TO_FLAG:
            raise BadRequest(f"{path}.{key}: unknown plugin option (flags are {', '.join(sorted(FLAGS.values()))})")
        if not isinstance(value, bool):
            raise BadRequest(f"{path}.{key}: Invalid value: {value!r}: must be true or false")
        flags[_KEY_TO_FLAG[key]] = value
    if fill_defaults:
        for flag, value in flags.items():
            if value is None and flag != "hierarchy":
                flags[flag] = True
    arguments = data.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise BadRequest(f"{path}.arguments: must be a mapping")
    return PluginOption(name, flags, Arguments(arguments))


def _check_hierarchy_combinations(tiers: list[Tier]) -> None:
    for i, tier in enumerate(tiers):
        names = {p.name for p in tier.plugins}
        drf_h = any(p.name == "drf" and p.enabled("hierarchy") for p in tier.plugins)
        if drf_h and "proportion" in names:
            raise BadRequest(f"tiers[{i}]: proportion and drf with enableHierarchy cannot be combined in one tier")


def named_config_text(name: str) -> str:
    """A configuration shipped with Lahar: ``default``, ``capacity`` or ``volcano``."""
    try:
        return (resources.files("lahar") / "data" / f"{name}-scheduler.yaml").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadRequest(f'no bundled scheduler configuration named "{name}" (try default, capacity or volcano)') from None


def default_config_text() -> str:
    return named_config_text("default")
