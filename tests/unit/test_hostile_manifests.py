"""Hostile manifests: YAML bombs and deep nesting are refused with a clear error, quickly and
without building what they describe; honest anchors and aliases still work.

The situation: someone hands ``lahar apply -f`` (or ``lahar simulate``, or ``lahar job run -f``)
a file crafted to exhaust the machine: the "billion laughs" document (nine anchors, each a list
of nine aliases of the previous one: a billion nodes in a few hundred bytes), or mappings and
lists nested tens of thousands deep, which would overflow the parser's recursion.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc

import pytest
from typer.testing import CliRunner

from lahar.cli.main import app
from lahar.errors import BadRequest
from lahar.model.manifest import MAX_ALIAS_NODES, MAX_DEPTH, load_files, load_objects


def billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    body = "".join(f"    {line}\n" for line in lines)
    return f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: lol\n  annotations:\n{body}"


def quadratic_blowup() -> str:
    """One big anchored list referenced many times: linear text, quadratic expansion."""
    items = ", ".join(["x"] * 2000)
    refs = "\n".join(f"  k{i}: *big" for i in range(200))
    return f"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: &big [{items}]\nspec:\n{refs}\n"


def deep_flow(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_json(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def deep_block(depth: int) -> str:
    return "".join(" " * i + "a:\n" for i in range(depth)) + " " * depth + "b: 1\n"


def deep_through_aliases() -> str:
    """Each anchor is only 40 levels deep, but nesting aliases stacks their depths."""
    deep = "[" * 40 + "x" + "]" * 40
    return f"a: &a {deep}\nb: &b [[[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"


HOSTILE = [
    ("billion laughs", billion_laughs(), "aliases would expand the document by more than"),
    ("quadratic blow-up", quadratic_blowup(), "aliases would expand the document by more than"),
    ("deep flow lists", deep_flow(20_000), f"nested deeper than {MAX_DEPTH} levels"),
    ("deep JSON objects", deep_json(20_000), f"nested deeper than {MAX_DEPTH} levels"),
    ("deep block mappings", deep_block(500), f"nested deeper than {MAX_DEPTH} levels"),
    ("depth stacked through aliases", deep_through_aliases(), f"nested deeper than {MAX_DEPTH} levels"),
]


@pytest.mark.parametrize("name,text,expected", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_yaml_is_refused_quickly_in_little_memory(name, text, expected):
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(BadRequest) as refused:
            load_objects(text, "bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 10
    assert peak < 64 * 1024 * 1024 + 40 * len(text), f"{name}: {peak} bytes at the peak"
    message = refused.value.message
    assert message.startswith("bomb.yaml: line ") and expected in message and "refused" in message


def test_the_limits_leave_honest_manifests_alone():
    shared = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: anchors}
spec:
  queue: default
  tasks:
  - name: a
    replicas: 2
    template: &pod {spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]}}
  - name: b
    replicas: 1
    template: *pod
"""
    job = load_objects(shared)[0]
    assert [t.template.spec.containers[0].resources.requests["cpu"] for t in job.spec.tasks] == ["1", "1"]
    nested = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "annotations": {"x": "y"}}}
    assert load_objects(json.dumps(nested))[0].name == "n"
    within = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: '1'}}\nextra: " + deep_flow(MAX_DEPTH - 1) + "\n"
    assert load_objects(within)[0].name == "n"  # 64 levels in all: the limit itself is accepted
    many = "".join(f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\n" for i in range(1000))
    assert len(load_objects(many)) == 1000  # size, not aliases, bounds plain documents
    assert MAX_ALIAS_NODES >= 10_000


def test_lahar_apply_refuses_a_bomb_before_sending_anything(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(billion_laughs())
    # nothing listens on this address: reaching the server would be exit code 3, not 1
    result = CliRunner().invoke(app, ["apply", "-f", str(bomb), "--server", "http://127.0.0.1:9"], prog_name="lahar")
    assert result.exit_code == 1, result.output
    assert f"error: {bomb}: line 11: aliases would expand the document by more than 100000 nodes" in result.stderr
    assert "Traceback" not in result.output
    deep = tmp_path / "deep.json"
    deep.write_text(deep_json(20_000))
    result = CliRunner().invoke(app, ["apply", "-f", str(deep), "--server", "http://127.0.0.1:9"], prog_name="lahar")
    assert result.exit_code == 1 and f"error: {deep}: line 1, column {6 * MAX_DEPTH + 1}: nested deeper than {MAX_DEPTH} levels" in result.stderr
    job = CliRunner().invoke(app, ["job", "run", "-f", str(bomb), "--server", "http://127.0.0.1:9"], prog_name="lahar")
    assert job.exit_code == 1 and f"error: {bomb}: line 11: aliases would expand" in job.stderr


def test_a_real_process_stays_small_on_a_bomb(tmp_path):
    """``lahar simulate`` on a bomb, in a process whose address space is capped at 1 GiB: it
    answers with the error, not with MemoryError or the kernel's OOM killer."""
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(billion_laughs())
    capped = "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); sys.argv = ['lahar'] + sys.argv[1:]; runpy.run_module('lahar.cli.main', run_name='__main__')"
    result = subprocess.run([sys.executable, "-c", capped, "simulate", str(bomb)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr[-2000:]
    assert f"{bomb}: line " in result.stderr and "billion laughs" in result.stderr and "Traceback" not in result.stderr


def test_load_files_names_the_file(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text(deep_block(200))
    with pytest.raises(BadRequest, match=rf"^{path}: line \d+, column \d+: nested deeper than {MAX_DEPTH} levels"):
        load_files([path])
