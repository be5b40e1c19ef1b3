"""Build Lahar. The scheduling core (``lahar.resources`` and ``lahar.scheduler``) and the pruning
of every object written (``lahar.wire``) are compiled to C extensions with mypyc when the build can
do it; the same source runs as plain Python otherwise.

The project's metadata is in ``pyproject.toml``; only the extensions are declared here.

- ``LAHAR_PURE_PYTHON=1``: build without the compiled core.
- ``LAHAR_REQUIRE_COMPILED=1``: fail the build when the core cannot be compiled (CI), instead of
  falling back to plain Python with a warning.
- An editable install (``pip install -e .``) is always plain Python, so that edits to the source
  take effect without a rebuild.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _core() -> list[str]:
    scheduler = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "src" / "lahar" / "scheduler").rglob("*.py"))
    return ["src/lahar/resources.py", "src/lahar/wire.py", *scheduler]


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


_BUILDS = {"bdist_wheel", "build", "build_ext", "install"}  # commands that build extensions (not metadata)


def _ext_modules() -> list:
    commands = set(sys.argv[1:])
    if _flag("LAHAR_PURE_PYTHON") or not commands & _BUILDS or any(arg.startswith("editable") or arg == "develop" for arg in commands):
        return []
    try:
        from mypyc.build import mypycify

        return mypycify(_core(), opt_level="3")
    except (Exception, SystemExit) as exc:  # no compiler, no headers, a mypy that will not take the source
        if _flag("LAHAR_REQUIRE_COMPILED"):
            raise
        print(f"lahar: building the scheduling core as plain Python ({type(exc).__name__}: {exc})", file=sys.stderr)
        return []


class BuildCore(build_ext):
    """``build_ext`` that leaves the core as plain Python when the C compiler fails (mypyc's C
    code is generated before; the compiler runs here), unless ``LAHAR_REQUIRE_COMPILED`` is set."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            if _flag("LAHAR_REQUIRE_COMPILED"):
                raise
            for ext in self.extensions:  # none of a partly built core: its modules load together
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            self.extensions = []
            print(f"lahar: the C compiler failed; the scheduling core stays plain Python ({type(exc).__name__}: {exc})", file=sys.stderr)


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": BuildCore})
