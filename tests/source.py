"""Whether the scheduling core under test is compiled (mypyc builds it into C extensions when
Lahar is installed; an editable install, or ``LAHAR_PURE_PYTHON=1``, keeps it plain Python)."""

from __future__ import annotations

from pathlib import Path

import lahar.resources
import lahar.scheduler.api

ROOT = Path(__file__).resolve().parents[1]
COMPILED = not all(module.__file__ and module.__file__.endswith(".py") for module in (lahar.resources, lahar.scheduler.api))
