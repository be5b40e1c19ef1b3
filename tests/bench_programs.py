"""The programs under ``bench/`` loaded as modules, for the tests of them. They import their
neighbours by name (``bench/callgrind.py``, ``bench/loop.py``, ``bench/idle.py``), so the folder
is on the import path while one loads."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_program(name: str) -> ModuleType:
    """``bench/<name>.py`` as a module of its own (``bench_<name>``)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # as an import does: a dataclass looks its module up there
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[spec.name]
            raise
        return module
    finally:
        sys.path.remove(str(BENCH))
