"""Callgrind's instruments on or off for the running benchmark, around the part it measures.

Run the benchmark under ``valgrind --tool=callgrind --instr-atstart=no``: nothing is counted
until ``instruments("on")``, so loading and building are left out of the figures.
"""

from __future__ import annotations

import os
import subprocess


def instruments(state: str) -> None:
    """Callgrind's instruments ``"on"`` or ``"off"`` for this process (``callgrind_control -i``)."""
    subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True)
