"""The results as a PNG: per timing phase the period error and the drift of each sender, latency last.

matplotlib is optional (``pip install -e '.[bench]'``, which scripts/bench does): it is imported
only when a figure is drawn, so without it the figure is skipped and everything else is written.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import analysis
from bench.report import OURS, PERIODIC, TESTBED

COLORS = {OURS: "tab:blue", "ecu-sim ccm": "tab:cyan", PERIODIC: "tab:orange", TESTBED: "tab:red"}


def draw(timings: Mapping[str, Mapping[str, analysis.StreamTiming]],
         latencies: Mapping[str, analysis.Latency], path: Path, title: str = "") -> Path | None:
    """Per phase: a histogram of period error and the cumulative drift over time; latency last."""
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    phases = list(timings)
    rows = len(phases) + (1 if latencies else 0)
    if rows == 0:
        return None
    fig, axes = plt.subplots(rows, 2, figsize=(13, 3.2 * rows), squeeze=False)
    for row, phase in enumerate(phases):
        hist, drift = axes[row]
        streams = timings[phase]
        errors = [e for s in (OURS, PERIODIC, TESTBED) if s in streams for e in streams[s].errors_ms]
        if errors:
            lo = max(-5.0, min(errors))
            hi = min(5.0, max(errors))
            if hi <= lo:
                lo, hi = lo - 0.1, hi + 0.1
            bins = [lo + (hi - lo) * i / 80 for i in range(81)]
            for sender in (PERIODIC, TESTBED, OURS):
                if sender in streams and streams[sender].errors_ms:
                    clipped = [min(max(e, lo), hi) for e in streams[sender].errors_ms]
                    hist.hist(clipped, bins=bins, histtype="step", linewidth=1.4, color=COLORS[sender],
                              label=f"{sender} (p99 {streams[sender].period_error.p99_ms:.3f} ms)")
        hist.set_yscale("log")
        hist.set_xlabel("period error (ms), clipped to the axis")
        hist.set_ylabel("intervals")
        hist.set_title(f"{phase}: period error")
        hist.legend(fontsize=8)
        for sender in (PERIODIC, TESTBED, OURS):
            if sender in streams and streams[sender].drift_curve:
                xs = [t for t, _ in streams[sender].drift_curve]
                ys = [d for _, d in streams[sender].drift_curve]
                drift.plot(xs, ys, color=COLORS[sender], linewidth=1.2,
                           label=f"{sender} (schedule {streams[sender].schedule_drift_ms:+.2f} ms)")
        drift.axhline(0.0, color="grey", linewidth=0.6)
        drift.set_xlabel("time since the first frame (s)")
        drift.set_ylabel("t_N - t_0 - N*period (ms)")
        drift.set_yscale("symlog", linthresh=1.0)
        drift.set_title(f"{phase}: cumulative drift")
        drift.legend(fontsize=8)
    if latencies:
        ax, spare = axes[-1]
        for name, lat in latencies.items():
            if lat.latencies_ms:
                color = COLORS[OURS] if name == OURS else COLORS[TESTBED]
                ax.hist(lat.latencies_ms, bins=40, histtype="step", linewidth=1.4, color=color,
                        label=f"{name} (p50 {lat.latency.p50_ms:.1f}, max {lat.latency.max_ms:.1f} ms)")
        ax.set_xlabel("APP step to the first speed frame that reflects it (ms)")
        ax.set_ylabel("steps")
        ax.set_title("latency")
        ax.legend(fontsize=8)
        spare.axis("off")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def title_of(result: Mapping[str, Any]) -> str:
    """What the figure was measured on, and when: a PNG travels without its table."""
    env = result["environment"]
    return (f"ecu-sim {env['git']} on {env['cpu']} x{env['cores']}, Python {env['python']}, "
            f"{time.strftime('%Y-%m-%d %H:%M')}")
