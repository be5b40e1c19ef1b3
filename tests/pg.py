"""A throwaway PostgreSQL cluster for tests: ``initdb`` into a temporary directory, a server on
a free loopback port, one database per test module, everything removed at the end.

The binaries come from ``/usr/lib/postgresql/*/bin`` (Debian and Ubuntu) or ``PATH``; without
them the PostgreSQL tests are skipped with the reason. PostgreSQL refuses to run as root, so a
root test run starts the cluster as the ``postgres`` user (or ``nobody``) through ``runuser``.

The cluster trades durability for speed (``fsync=off``): it tests Lahar's logic, not disks.
Clients connect over TCP with a password (``scram-sha-256``), so that a wrong password is a
real authentication failure.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PgCluster", "find_binaries", "start_cluster"]

USER = "lahar"
PASSWORD = "lahar-test-secret"


def find_binaries() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, newest version first."""
    def version(path: str) -> tuple[int, ...]:
        found = re.search(r"postgresql/([\d.]+)/bin", path)
        return tuple(int(p) for p in found.group(1).split(".")) if found else (0,)

    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent))
    for directory in candidates:
        if all((Path(directory) / tool).exists() for tool in ("initdb", "pg_ctl", "postgres")):
            return Path(directory)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as() -> str | None:
    """The user to run PostgreSQL as: None for ourselves; as root an unprivileged account."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and there is no postgres or nobody user to run PostgreSQL as")


@dataclass
class PgCluster:
    bin: Path
    root: Path
    port: int
    user: str | None
    databases: list[str] = field(default_factory=list)

    def url(self, database: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def _command(self, *args: str) -> list[str]:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.user is None:
            return command
        runuser = shutil.which("runuser")
        if runuser:
            return [runuser, "-u", self.user, "--", *command]
        return ["su", "-s", "/bin/sh", self.user, "-c", " ".join(_quote(c) for c in command)]

    def run(self, *args: str, timeout: float = 60) -> None:
        done = subprocess.run(self._command(*args), capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")

    def create_database(self, prefix: str) -> str:
        """A new, empty database; its name (``prefix`` made safe, plus a counter)."""
        import psycopg

        name = re.sub(r"[^a-z0-9_]", "_", prefix.lower())[:40] + f"_{len(self.databases)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.databases.append(name)
        return name

    def stop(self) -> None:
        try:
            self.run("pg_ctl", "stop", "-D", str(self.root / "data"), "-m", "immediate", "-w", timeout=30)
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.root, ignore_errors=True)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def start_cluster() -> PgCluster:
    """Start a fresh cluster; raises ``RuntimeError`` (with initdb's or the server's words) if it
    cannot. The caller stops it with ``stop()``."""
    binaries = find_binaries()
    if binaries is None:
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="lahar-pg-"))
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    os.chmod(root, 0o700)
    (root / "pwfile").write_text(PASSWORD + "\n")
    if user is not None:
        os.chown(root / "pwfile", pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
    cluster = PgCluster(binaries, root, _free_port(), user)
    try:
        cluster.run(
            "initdb", "-D", str(root / "data"), "-U", USER, f"--pwfile={root / 'pwfile'}",
            "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C", "-N",
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={cluster.port} -c unix_socket_directories={root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
            "-c shared_buffers=32MB"
        )
        cluster.run("pg_ctl", "start", "-D", str(root / "data"), "-l", str(root / "log"), "-o", options, "-w", "-t", "60", timeout=90)
    except BaseException as exc:
        log = (root / "log").read_text(errors="replace")[-2000:] if (root / "log").exists() else ""
        cluster.stop()
        raise RuntimeError(f"{exc}\n{log}") from None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", cluster.port), timeout=1):
                return cluster
        except OSError:
            time.sleep(0.05)
    cluster.stop()
    raise RuntimeError("the PostgreSQL server did not accept connections")


# --------------------------------------------------------------------------- pytest fixtures

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def pg_cluster():
    """One throwaway PostgreSQL server for the whole run (each xdist worker starts its own)."""
    try:
        cluster = start_cluster()
    except FileNotFoundError as exc:
        pytest.skip(f"{exc}: install the distribution's postgresql package to run this test")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def pg_database(pg_cluster, request) -> str:
    """The URL of a new database for this test module."""
    return pg_cluster.url(pg_cluster.create_database(request.module.__name__.rsplit(".", 1)[-1]))


def reset_database(url: str) -> str:
    """Empty the database at ``url`` (every table dropped); returns ``url``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return url
