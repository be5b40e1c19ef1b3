"""Reading a simulation's inputs: manifests, and the scheduler configuration to use.

The configuration is, in order of precedence: ``--config`` (a file, or the name of a bundled
configuration: ``default``, ``capacity``, ``capacity-hierarchy``, ``volcano``), a
``SchedulerConfiguration`` document among the manifests, or Lahar's default.
"""

from __future__ import annotations

from pathlib import Path

from lahar.errors import BadRequest
from lahar.model.base import ApiObject
from lahar.model.cluster import SchedulerConfiguration
from lahar.model.manifest import load_files
from lahar.scheduler.framework.config import SchedulerConf, default_config_text, load_config, named_config_text

__all__ = ["load_simulation_inputs", "resolve_config"]


def resolve_config(config: str | None, objects: list[ApiObject]) -> SchedulerConf:
    if config:
        path = Path(config)
        if path.is_file():
            return load_config(path.read_text(encoding="utf-8"))
        if "/" in config or config.endswith((".yaml", ".yml", ".conf")):
            raise BadRequest(f"{config}: no such file")
        return load_config(named_config_text(config))
    documents = [o for o in objects if isinstance(o, SchedulerConfiguration)]
    if len(documents) > 1:
        raise BadRequest("the manifests hold more than one SchedulerConfiguration: keep one")
    if documents:
        doc = documents[0]
        return load_config({"actions": doc.actions, "tiers": doc.tiers, "configurations": doc.configurations})
    return load_config(default_config_text())


def load_simulation_inputs(files: list[str], config: str | None) -> tuple[list[ApiObject], SchedulerConf]:
    if not files:
        raise BadRequest("give at least one manifest file (or - for standard input)")
    objects = load_files(files)
    return objects, resolve_config(config, objects)
