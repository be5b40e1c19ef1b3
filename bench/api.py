"""End to end through the HTTP API: submit single-pod jobs from concurrent clients, wait until bound.

    python bench/api.py --jobs 10000 --clients 16
    python bench/api.py --jobs 10000 --db postgresql://user@host/lahar   # another store
    python bench/api.py --jobs 10000 --client httpx   # clients on httpx, as the rounds before 2026-11-29 measured

Starts a real ``lahar server`` subprocess on loopback (``--no-auth``; ``--auth`` keeps authentication
on and sends the admin token) over a fresh SQLite file in a
temporary folder (or the given ``--db`` URL), creates enough nodes for every pod and one queue,
then ``--clients`` threads each POST their share of one-task vcjobs (one pod each), with the
standard library's ``http.client`` on bodies encoded beforehand (``raw``, the default) or, with
``--client httpx``, httpx. The clients run in this one interpreter: httpx costs them about 1.5 ms
of CPU a request, so they cannot send more than 520 to 740 requests a second on a 2-core
machine even to a server that only answers (``floor.py``), below the 1,000 the target asks the
server for; ``raw`` costs them 0.25 to 0.45 ms and sends 2,300 to 3,000. The clock
runs from the first submit until the server's ``lahar_binds_total`` reaches ``--jobs``; a pod
list afterwards confirms how many pods carry a node. Prints one JSON line: pods bound per second
end to end, p50/p99 submit latency, submit and total seconds, and the server process's CPU seconds
(per job too: the figure to compare on a busy machine, where wall time depends on the neighbours;
and the share of it spent in the kernel, ``server_system_cpu_share``), and how much of it per job the control loop's ticks took (the rest served the requests); how
long per job the control loop's transactions and the write requests' groups held the server's
write lock, and what share of the wall clock the two together held it (writes run one at a
time: near 1, the writes bound the rate, not the CPU); the
CPU the clients themselves spent per job (on a small machine they share its cores with the server);
the write requests per commit (requests that queue up behind one another commit together);
and, once every pod is bound, how long a list of all the pods takes to answer (median of 3, the
answer read but not parsed).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from options import count, duration, parser as bench_parser, positive_seconds

API = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
NODES = "/api/v1/nodes"
NODE_PODS = 110
LOOP_CPU = "lahar_control_loop_cpu_seconds_total"  # the control loop's ticks; the rest serves requests
GROUPS, GROUPED = "lahar_write_groups_total", "lahar_grouped_writes_total"  # write requests committed together
# how long the control loop's transactions and the write requests' groups held the write lock
LOOP_HELD = 'lahar_write_lock_seconds_total{holder="control_loop"}'
REQUESTS_HELD = 'lahar_write_lock_seconds_total{holder="requests"}'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db: str, home: Path, port: int, period: str, auth: bool = False) -> subprocess.Popen:
    command = [sys.executable, "-m", "lahar.cli.main", "server", "--db", db, "--port", str(port), "--period", period]
    command += [] if auth else ["--no-auth"]
    log = (home / "server.log").open("w")
    process = subprocess.Popen(command, env={**os.environ, "LAHAR_HOME": str(home)}, stdout=log, stderr=subprocess.STDOUT)
    if not answers_health(process, port):
        process.kill()
        sys.exit("server did not start:\n" + (home / "server.log").read_text()[-2000:])
    return process


def stop(process: subprocess.Popen) -> None:
    """Ask the server process to stop (SIGTERM); kill it if it has not within 15 s."""
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()


def answers_health(process: subprocess.Popen, port: int, seconds: float = 60.0) -> bool:
    """Whether the server process answers ``/healthz`` on ``port`` within ``seconds`` (False
    as soon as it exits)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            time.sleep(0.1)
    return False


def seed(client: httpx.Client, jobs: int) -> None:
    for i in range(jobs // NODE_PODS + 2):
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"bench-{i:04d}"}, "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": str(NODE_PODS)}}}
        client.post(NODES, json=node).raise_for_status()
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "bench"}, "spec": {"weight": 1}}
    client.post(QUEUES, json=queue).raise_for_status()


def job(name: str) -> dict:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    task = {"name": "worker", "replicas": 1, "template": {"spec": {"containers": [container]}}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": {"queue": "bench", "minAvailable": 1, "tasks": [task]}}


def share(index: int, args) -> list:
    """One client's share of the jobs (every ``--clients``-th), made before the clock starts:
    documents for httpx, encoded bodies for the raw client."""
    names = [f"j{n:06d}" for n in range(index, args.jobs, args.clients)]
    if args.client == "raw":
        return [json.dumps(job(name)).encode() for name in names]
    return [job(name) for name in names]


@contextmanager
def poster(kind: str, url: str, port: int, headers: dict[str, str]) -> Iterator[Callable[[Any], tuple[int, str]]]:
    """A function that POSTs one job (a document for httpx, encoded bytes for ``raw``) to the
    vcjob route on its own keep-alive connection: the answer's status and text. ``raw`` is the
    standard library's ``http.client``: a request costs the client a fraction of what httpx
    spends on it, so on a small machine more of the cores is left to the server."""
    if kind == "raw":
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        sent = {**headers, "Content-Type": "application/json"}

        def post_raw(body: bytes) -> tuple[int, str]:
            connection.request("POST", API, body=body, headers=sent)
            answer = connection.getresponse()
            return answer.status, answer.read().decode(errors="replace")

        try:
            yield post_raw
        finally:
            connection.close()
        return
    with httpx.Client(base_url=url, timeout=60, headers=headers) as c:

        def post(document: dict) -> tuple[int, str]:
            answer = c.post(API, json=document)
            return answer.status_code, answer.text

        yield post


def submit_all(documents: list, args, url: str, port: int, headers: dict[str, str]) -> tuple[list[float], list[str]]:
    """Submit one client's share: each submit's seconds, and the answers that were not 201 Created."""
    mine, bad = [], []
    with poster(args.client, url, port, headers) as post:
        for document in documents:
            t = time.perf_counter()
            status, text = post(document)
            mine.append(time.perf_counter() - t)
            if status != 201:
                bad.append(f"{status} {text[:200]}")
    return mine, bad


def cpu_times(pid: int) -> tuple[float, float] | None:
    """User and system CPU seconds of a process so far (Linux ``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / tick, int(fields[12]) / tick
    except (OSError, ValueError, IndexError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux ``/proc``; None elsewhere)."""
    times = cpu_times(pid)
    return None if times is None else sum(times)


def server_cpu(before: tuple[float, float] | None, after: tuple[float, float] | None, jobs: int) -> dict:
    """The server's CPU over the run: seconds, milliseconds a job, and the share of it spent in
    the kernel (system time: the disk syncs, the sockets, the threads' wake-ups); None each
    where ``/proc`` could not be read."""
    if before is None or after is None:
        return {"server_cpu_seconds": None, "server_cpu_ms_per_job": None, "server_system_cpu_share": None}
    user, system = after[0] - before[0], after[1] - before[1]
    total = user + system
    return {
        "server_cpu_seconds": round(total, 2),
        "server_cpu_ms_per_job": round(1000 * total / jobs, 2),
        "server_system_cpu_share": round(system / total, 3) if total > 0 else None,
    }


def metric(client: httpx.Client, name: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def binds(client: httpx.Client) -> int:
    return int(metric(client, "lahar_binds_total"))


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--jobs", type=count(1), default=10000, help="one-pod vcjobs to submit (default: %(default)s)")
    parser.add_argument("--clients", type=count(1), default=16, help="clients submitting at once, one connection each (default: %(default)s)")
    parser.add_argument("--db", default=None, help="store URL (default: a fresh SQLite file in a temporary folder)")
    parser.add_argument("--period", type=duration, default="0.2s", help="the server's scheduling period (default: %(default)s)")
    parser.add_argument("--timeout", type=positive_seconds, default=600.0, help="seconds from the first submit until the figures are taken, every pod bound or not (default: %(default)s)")
    parser.add_argument(
        "--client",
        choices=("httpx", "raw"),
        default="raw",
        help="the clients' HTTP library: raw http.client connections with the bodies encoded beforehand, or httpx (about five times the clients' CPU a request: on 2 cores they cannot send 1,000 a second) (default: %(default)s)",
    )
    parser.add_argument("--auth", action="store_true", help="authentication on, as a server runs by default (every request sends the admin token)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on the way out
    with tempfile.TemporaryDirectory(prefix="lahar-bench-") as tmp:
        home = Path(tmp)
        port = free_port()
        server = start_server(args.db or str(home / "lahar.db"), home, port, args.period, args.auth)
        url = f"http://127.0.0.1:{port}"
        headers = {"Authorization": "Bearer " + (home / "token").read_text().strip()} if args.auth else {}
        try:
            with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
                seed(c, args.jobs)
            latencies: list[float] = []
            failures: list[str] = []
            lock = threading.Lock()

            shares = [share(i, args) for i in range(args.clients)]

            def client(index: int) -> None:
                mine, bad = submit_all(shares[index], args, url, port, headers)
                with lock:
                    latencies.extend(mine)
                    failures.extend(bad)

            threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
            times_before = cpu_times(server.pid)
            with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
                loop_before = metric(c, LOOP_CPU)
                groups_before, grouped_before = metric(c, GROUPS), metric(c, GROUPED)
                held_before = metric(c, LOOP_HELD), metric(c, REQUESTS_HELD)
            start, client_cpu = time.perf_counter(), time.process_time()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            submitted = time.perf_counter() - start
            client_cpu = time.process_time() - client_cpu
            with httpx.Client(base_url=url, timeout=120, headers=headers) as c:
                deadline = start + args.timeout
                done = binds(c)
                while done < args.jobs - len(failures) and time.perf_counter() < deadline:
                    time.sleep(0.05)
                    done = binds(c)
                total = time.perf_counter() - start
                times_after = cpu_times(server.pid)
                loop_cpu = metric(c, LOOP_CPU) - loop_before
                groups, grouped = metric(c, GROUPS) - groups_before, metric(c, GROUPED) - grouped_before
                loop_held, requests_held = metric(c, LOOP_HELD) - held_before[0], metric(c, REQUESTS_HELD) - held_before[1]
                listed = []
                for _ in range(3):  # the list of every pod, as a person or a dashboard asks for it
                    t = time.perf_counter()
                    answer = c.get(PODS)
                    listed.append(time.perf_counter() - t)
                pods = answer.json()["items"]
            bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
            latencies.sort()
            print(
                json.dumps(
                    {
                        "bench": "api",
                        "store": "sqlite" if args.db is None else args.db.split(":", 1)[0],
                        "jobs": args.jobs,
                        "clients": args.clients,
                        "client": args.client,
                        "auth": args.auth,
                        "failed_submits": len(failures),
                        "pods_bound": bound,
                        "pods_bound_per_second": round(bound / total, 1),
                        "submits_per_second": round(len(latencies) / submitted, 1),
                        "submit_p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
                        "submit_p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 1) if latencies else None,
                        "submit_seconds": round(submitted, 2),
                        "total_seconds": round(total, 2),
                        **server_cpu(times_before, times_after, args.jobs),
                        "loop_cpu_ms_per_job": round(1000 * loop_cpu / args.jobs, 2),
                        "client_cpu_ms_per_job": round(1000 * client_cpu / args.jobs, 2),
                        "writes_per_commit": round(grouped / groups, 2) if groups else None,
                        "loop_locked_ms_per_job": round(1000 * loop_held / args.jobs, 2),
                        "requests_locked_ms_per_job": round(1000 * requests_held / args.jobs, 2),
                        "locked_share": round((loop_held + requests_held) / total, 3),
                        "list_pods_ms": round(1000 * statistics.median(listed), 1),
                    }
                )
            )
            if failures:
                print("first failures: " + "; ".join(failures[:3]), file=sys.stderr)
        finally:
            stop(server)


if __name__ == "__main__":
    main()
