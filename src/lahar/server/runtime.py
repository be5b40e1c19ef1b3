"""Where tasks run. ``simulated`` (the default) ends a task ``lahar.dev/duration`` after it starts;
``local`` runs each bound task's container command as a process on this machine.

The local runtime, twice per control-loop tick (inside its transactions: before the cycle, for
the processes that exited, and after it, for the tasks it bound or evicted):

- a pod bound and Running with a container ``command`` (and ``args``) and no process yet gets
  one, with stdout and stderr kept in ``<logs>/<namespace>/<pod>.out`` and ``.err`` and the
  environment variables ``LAHAR_POD``, ``LAHAR_NAMESPACE``, ``LAHAR_NODE``;
- a process that exited sets its pod's phase: exit code 0 -> Succeeded, any other -> Failed (as does a
  command that cannot be started, with the reason in its ``.err`` log);
- a process whose pod is no longer Running (evicted: back to Pending) or is gone (deleted) is
  terminated (SIGTERM), then killed (SIGKILL) if it is still there after ``grace`` seconds.

A pod without a command runs as in the simulated runtime (its ``lahar.dev/duration``, if any).
After a restart of the server, a Running pod whose process this server did not start is started
again (its earlier process died with the server, or is no longer watched).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lahar.model.workload import Pod

__all__ = ["LocalRuntime", "RUNTIMES"]

RUNTIMES = ("simulated", "local")


@dataclass
class _Process:
    popen: subprocess.Popen
    node: str
    stopping_since: float | None = None


class LocalRuntime:
    def __init__(self, logs: Path, grace: float = 10.0) -> None:
        self.logs, self.grace = Path(logs), grace
        self.processes: dict[str, _Process] = {}

    def step(self, world: Any) -> None:
        """Start, reap and stop processes to match the pods as the world holds them now."""
        for key, process in list(self.processes.items()):
            pod = world.pods.get(key)
            if pod is None or pod.phase != "Running" or pod.spec.node_name != process.node:
                self._stop(key, process)
            elif process.popen.poll() is not None:
                del self.processes[key]
                _end(world, pod, "Succeeded" if process.popen.returncode == 0 else "Failed")
        for key, pod in list(world.pods.items()):
            if key not in self.processes and pod.phase == "Running" and pod.spec.node_name and _command(pod) and not self._start(key, pod):
                _end(world, pod, "Failed")

    def stop_all(self) -> None:
        for key, process in list(self.processes.items()):
            process.stopping_since = time.monotonic() - self.grace  # no grace at shutdown
            self._stop(key, process)

    def _start(self, key: str, pod: Pod) -> bool:
        """Start the pod's process; False (the reason in its ``.err`` log) when it cannot start."""
        folder = self.logs / (pod.metadata.namespace or "default")
        folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "LAHAR_POD": pod.name, "LAHAR_NAMESPACE": pod.metadata.namespace or "default", "LAHAR_NODE": pod.spec.node_name or ""}
        with (folder / f"{pod.name}.out").open("ab") as out, (folder / f"{pod.name}.err").open("ab") as err:
            try:
                popen = subprocess.Popen(_command(pod), stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
            except OSError as exc:  # no such program, not executable
                err.write(f"lahar: cannot start {_command(pod)[0]!r}: {exc}\n".encode())
                return False
        self.processes[key] = _Process(popen, pod.spec.node_name or "")
        return True

    def _stop(self, key: str, process: _Process) -> None:
        if process.popen.poll() is not None:
            del self.processes[key]
            return
        now = time.monotonic()
        if process.stopping_since is None:
            process.stopping_since = now
            _signal(process.popen, signal.SIGTERM)
        elif now - process.stopping_since >= self.grace:
            _signal(process.popen, signal.SIGKILL)
            process.popen.wait(5)
            del self.processes[key]


def _end(world: Any, pod: Pod, phase: str) -> None:
    """The task is over: its pod takes ``phase`` (written through the world, to the store)."""
    ended = pod.model_copy(deep=True)
    ended.status.phase = phase
    world._store(ended)


def _command(pod: Pod) -> list[str]:
    if not pod.spec.containers:
        return []
    container = pod.spec.containers[0]
    return [*(container.command or []), *(container.args or [])]


def _signal(popen: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(popen.pid, sig)  # the task's whole process group
    except ProcessLookupError:
        pass
