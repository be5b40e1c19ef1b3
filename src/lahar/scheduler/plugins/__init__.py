"""Scheduler plugins, one module each, registered by name."""

from lahar.scheduler.plugins.base import Plugin
from lahar.scheduler.plugins.binpack import BinpackPlugin
from lahar.scheduler.plugins.capacity import CapacityPlugin
from lahar.scheduler.plugins.conformance import ConformancePlugin
from lahar.scheduler.plugins.drf import DrfPlugin
from lahar.scheduler.plugins.gang import GangPlugin
from lahar.scheduler.plugins.nodeorder import NodeOrderPlugin
from lahar.scheduler.plugins.overcommit import OvercommitPlugin
from lahar.scheduler.plugins.predicates import PredicatesPlugin
from lahar.scheduler.plugins.priority import PriorityPlugin
from lahar.scheduler.plugins.proportion import ProportionPlugin
from lahar.scheduler.plugins.sla import SlaPlugin

PLUGINS: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (
        PriorityPlugin, GangPlugin, ConformancePlugin, ProportionPlugin, CapacityPlugin,
        OvercommitPlugin, DrfPlugin, PredicatesPlugin, NodeOrderPlugin, BinpackPlugin, SlaPlugin,
    )
}  # fmt: skip



def register(cls: type[Plugin]) -> None:
    """Make a plugin class available to configurations under ``cls.name`` (tests, extensions)."""
    from lahar.scheduler.framework.config import KNOWN_PLUGINS

    PLUGINS[cls.name] = cls
    if cls.name not in KNOWN_PLUGINS:
        KNOWN_PLUGINS.append(cls.name)


__all__ = ["PLUGINS", "Plugin", "register"]
