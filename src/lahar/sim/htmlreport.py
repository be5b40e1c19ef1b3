"""The HTML report of a what-if run (``lahar simulate --report out.html``).

One self-contained file, to mail or attach to a ticket: tables, and plots drawn with
matplotlib (Agg backend, no display needed) embedded as base64 PNGs, so it opens anywhere
without a network. A single run shows: usage per queue over time stacked against capacity,
the wait-time CDF per queue, utilisation and Jain's index over time. A comparison shows each
plot for both sides in two columns, and the per-queue differences as a table and a chart.

Everything drawn comes from the metrics (``lahar.sim.metrics``) alone, so a report can be
rebuilt from a ``--metrics`` file (``render_report(json.load(...))``).
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lahar.sim.compare import difference_rows  # noqa: E402
from lahar.sim.metrics import main_resource, queue_table, summary_rows  # noqa: E402

__all__ = ["render_report", "render_comparison"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}
img{max-width:100%;height:auto}.note{color:#555;font-size:.9em}
"""


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>" if any(header) else ""
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


def _png(fig: Any, alt: str) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _time_unit(horizon: float) -> tuple[str, float]:
    if horizon >= 3 * 86400:
        return "days", 86400.0
    if horizon >= 2 * 3600:
        return "hours", 3600.0
    return "minutes", 60.0


def _wait_unit(longest: float) -> tuple[str, float]:
    if longest >= 2 * 3600:
        return "hours", 3600.0
    if longest >= 120:
        return "minutes", 60.0
    return "seconds", 1.0


def _colors(names: list[str]) -> dict[str, Any]:
    palette = plt.get_cmap("tab20")
    return {name: palette(i % 20) for i, name in enumerate(sorted(names))}


# ----------------------------------------------------------------- plots


def _edges(series: dict[str, Any], horizon: float) -> np.ndarray:
    """Bin start times, and the end of the last bin, so that steps reach the end of the run."""
    starts = list(series["time"])
    if not starts:
        return np.zeros(0)
    return np.array([*starts, max(horizon, starts[-1] + (series["width"] or 0))])


def _closed(values: list) -> list:
    """A series with its last value repeated, to go with ``_edges``."""
    return [*values, values[-1]] if values else []


def usage_plot(metrics: dict[str, Any], colors: dict[str, Any], title: str) -> str:
    """Allocated main resource per queue, stacked, against the cluster's capacity."""
    series = metrics["series"]
    resource = main_resource(series.get("capacity") or {})
    unit, scale = _time_unit(metrics["summary"]["time"])
    times = _edges(series, metrics["summary"]["time"]) / scale
    names = [n for n in sorted(series["queues"]) if any(series["queues"][n]["allocated"].get(resource, []))]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    if len(times) and names:
        stacks = [_closed(series["queues"][n]["allocated"][resource]) for n in names]
        ax.stackplot(times, stacks, labels=names, colors=[colors[n] for n in names], step="post")
    ax.axhline(series.get("capacity", {}).get(resource, 0), color="black", linestyle="--", linewidth=1, label="capacity")
    ax.set(xlabel=f"time ({unit})", ylabel=f"allocated {resource}", title=title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig, f"usage per queue: {title}")


def wait_cdf_plot(metrics: dict[str, Any], colors: dict[str, Any], title: str) -> str:
    """Fraction of each queue's jobs started within a wait (never-started jobs never reach 1)."""
    by_queue: dict[str, list[dict]] = {}
    for job in metrics["jobs"].values():
        by_queue.setdefault(job["queue"], []).append(job)
    unit, scale = _wait_unit(max((j["wait"] for j in metrics["jobs"].values() if j["wait"] is not None), default=0.0))
    right = max([2.0] + [j["wait"] / scale * 1.5 for j in metrics["jobs"].values() if j["wait"] is not None])
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for name, jobs in sorted(by_queue.items()):
        waits = sorted(j["wait"] / scale for j in jobs if j["wait"] is not None)
        if waits:
            fractions = np.arange(1, len(waits) + 1) / len(jobs)
            ax.step([0.0, *waits, right], [0.0, *fractions, fractions[-1]], where="post", label=name, color=colors.get(name))
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(0, right)
    ax.set(xlabel=f"wait ({unit}, log scale above 1)", ylabel="fraction of the queue's jobs", ylim=(0, 1.02), title=title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig, f"wait-time CDF per queue: {title}")


def utilisation_plot(metrics: dict[str, Any], title: str) -> str:
    """Utilisation per resource with capacity, and Jain's index, over time."""
    series = metrics["series"]
    unit, scale = _time_unit(metrics["summary"]["time"])
    times = _edges(series, metrics["summary"]["time"]) / scale
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 4.6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    for resource, values in sorted(series["utilisation"].items()):
        if any(values):
            top.step(times, np.array(_closed(values)) * 100, where="post", label=resource)
    top.set(ylabel="utilisation (%)", ylim=(0, 105), title=title)
    if top.get_legend_handles_labels()[0]:
        top.legend(fontsize=7)
    jain = np.array([np.nan if j is None else j for j in _closed(series["jain"])], dtype=float)
    if len(times):
        bottom.step(times, jain, where="post", color="tab:purple")
    bottom.set(xlabel=f"time ({unit})", ylabel="Jain index", ylim=(0, 1.05))
    return _png(fig, f"utilisation and fairness: {title}")


def waits_bar_plot(diff: dict[str, Any], labels: list[str]) -> str:
    """p50 and p90 wait per queue, both sides, as grouped bars."""
    names = sorted(diff["queues"])
    x = np.arange(len(names))
    longest = max((v or 0.0 for q in diff["queues"].values() for v in (*q["wait_p90"][:2], *q["wait_p50"][:2])), default=0.0)
    unit, scale = _wait_unit(longest)
    fig, ax = plt.subplots(figsize=(max(7, len(names) * 0.7), 3.8))
    palette = plt.get_cmap("tab20")
    for i, (key, suffix) in enumerate((("wait_p50", "p50"), ("wait_p90", "p90"))):
        for side in (0, 1):
            values = [(diff["queues"][n][key][side] or 0.0) / scale for n in names]
            offset = (2 * i + side - 1.5) * 0.2
            ax.bar(x + offset, values, width=0.2, label=f"{labels[side]} {suffix}", color=palette(2 * side + i))
    ax.set_xticks(x, names, rotation=45, ha="right", fontsize=8)
    ax.set(ylabel=f"wait ({unit}, log scale above 1)", title="wait per queue: p50 and p90")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return _png(fig, "wait per queue, both sides")


# ----------------------------------------------------------------- pages


def _page(title: str, body: str) -> str:
    return f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n'


def render_report(metrics: dict[str, Any], title: str = "Lahar what-if report", note: str = "") -> str:
    """The HTML page of one run."""
    colors = _colors(list(metrics["queues"]) + list(metrics["series"]["queues"]))
    header, rows = queue_table(metrics)
    body = [
        f'<p class="note">{html.escape(note)}</p>' if note else "",
        "<h2>Summary</h2>", _table(["", ""], summary_rows(metrics)),
        "<h2>Queues</h2>", _table(header, rows),
        "<h2>Usage per queue</h2>", usage_plot(metrics, colors, "usage per queue"),
        "<h2>Wait-time CDF</h2>", wait_cdf_plot(metrics, colors, "wait-time CDF"),
        "<h2>Utilisation and fairness</h2>", utilisation_plot(metrics, "utilisation"),
    ]  # fmt: skip
    return _page(title, "\n".join(body))


def render_comparison(result: dict[str, Any], title: str = "Lahar what-if comparison", note: str = "") -> str:
    """The HTML page of a comparison: each section with side A and side B in two columns."""
    sides = result["sides"]
    labels = [s["label"] for s in sides]
    metrics = [s["metrics"] for s in sides]
    colors = _colors([n for m in metrics for n in [*m["queues"], *m["series"]["queues"]]])
    header, rows = difference_rows(result["differences"])

    def pair(make) -> str:
        return '<div class="pair">' + "".join(f"<div>{make(m, label)}</div>" for m, label in zip(metrics, labels)) + "</div>"

    body = [
        f'<p class="note">{html.escape(note)}</p>' if note else "",
        "<h2>Sides</h2>", _table(["side", "label", "source"], [[letter, s["label"], s["source"]] for letter, s in zip("AB", sides)]),
        "<h2>Summary</h2>", pair(lambda m, label: f"<h3>{html.escape(label)}</h3>" + _table(["", ""], summary_rows(m))),
        "<h2>Differences per queue</h2>", '<p class="note">Δ = B - A; hours: share of all the main resource\'s hours.</p>',
        _table(header, rows), waits_bar_plot(result["differences"], labels),
        "<h2>Usage per queue</h2>", pair(lambda m, label: usage_plot(m, colors, label)),
        "<h2>Wait-time CDF</h2>", pair(lambda m, label: wait_cdf_plot(m, colors, label)),
        "<h2>Utilisation and fairness</h2>", pair(lambda m, label: utilisation_plot(m, label)),
        "<h2>Queues</h2>", pair(lambda m, label: f"<h3>{html.escape(label)}</h3>" + _table(*queue_table(m))),
    ]  # fmt: skip
    return _page(title, "\n".join(body))
