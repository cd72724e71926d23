"""The results as a Markdown table, a list of targets met or missed, and a PNG figure.

matplotlib is optional (``pip install -e '.[bench]'``, which scripts/bench does): without it
the figure is skipped and everything else is written. The runtime never imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import analysis

OURS = "ecu-sim (ECU)"
PERIODIC = "send_periodic"
TESTBED = "testbed loop"
SENDERS = (OURS, "ecu-sim ccm", PERIODIC, TESTBED)
WIRE_PHASES = ("quiet", "flood", "hog", "hog-rt")
COLORS = {OURS: "tab:blue", "ecu-sim ccm": "tab:cyan", PERIODIC: "tab:orange", TESTBED: "tab:red"}

#: target name -> limit; what each means is in docs/performance.md
TARGET_P99_MS = 1.0
TARGET_DRIFT_MS = 2.0
TARGET_CPU_PCT = 0.5
TARGET_STARTUP_S = 1.0
TARGET_SIM_TICKS = 50_000.0
TARGET_RSS_MB = 60.0
DRIFT_SPAN_S = 600.0


def _f(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _get(result: Mapping[str, Any], *path: str) -> Any:
    node: Any = result
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def targets(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each target with its measured value and whether it was met (None: not measured)."""
    rows: list[dict[str, Any]] = []

    def add(name: str, limit: str, value: Any, met: bool | None, note: str = "") -> None:
        rows.append({"target": name, "limit": limit, "measured": value, "met": met, "note": note})

    ours = _get(result, "quiet", "timing", OURS)
    periodic = _get(result, "quiet", "timing", PERIODIC)
    if ours and periodic:
        p99 = ours["period_error"]["p99_ms"]
        base = periodic["period_error"]["p99_ms"]
        add("p99 of abs period error, quiet", f"<= {TARGET_P99_MS} ms", f"{p99:.3f} ms", p99 <= TARGET_P99_MS)
        add("p99 of abs period error vs send_periodic", "not worse (ratio <= 1)",
            f"{p99:.3f} / {base:.3f} ms = {analysis.ratio(p99, base):.2f}", p99 <= base)
        span = ours["span_s"]
        drift = ours["schedule_drift_ms"]
        measured = (f"{drift:+.3f} ms over {span:.0f} s (last frame {ours['final_drift_ms']:+.3f} ms, "
                    f"fit {ours['drift_rate_ms_per_min']:+.4f} ms/min)")
        if span >= DRIFT_SPAN_S:
            add("abs drift after 10 min", f"< {TARGET_DRIFT_MS} ms", measured, abs(drift) < TARGET_DRIFT_MS)
        else:
            add("abs drift after 10 min", f"< {TARGET_DRIFT_MS} ms", measured, None,
                "run --long for 10 minutes")
    for name, label in (("ecu", "ecu-sim"), ("ccm", "ecu-sim ccm")):
        cpu = _get(result, "quiet", "cpu", name)
        if cpu:
            add(f"CPU at 10 Hz, {label}", f"<= {TARGET_CPU_PCT} % of one core",
                f"{cpu['pct_of_core']:.3f} % ({cpu['us_per_tick']:.0f} us/tick)",
                cpu["pct_of_core"] <= TARGET_CPU_PCT)
    for name, label in (("ecu", "ecu-sim"), ("ccm", "ecu-sim ccm")):
        cpu = _get(result, "quiet", "cpu", name)
        if cpu:
            add(f"peak RSS, {label}", f"<= {TARGET_RSS_MB:.0f} MB", f"{cpu['peak_rss_mb']:.1f} MB",
                cpu["peak_rss_mb"] <= TARGET_RSS_MB)
    for command in ("ecu-sim", "ecu-sim ccm"):
        start = _get(result, "startup", "first_frame_s", command)
        if start:
            add(f"start-up to first frame, {command}", f"<= {TARGET_STARTUP_S} s",
                f"median {start['median']:.3f} s, max {start['max']:.3f} s",
                start["median"] <= TARGET_STARTUP_S)
    sim = _get(result, "throughput")
    if sim:
        best = sim["simulate_cli_best"]
        cpu_best = sim["in_process"]["direct"]["cpu_best"]
        add("ecu-sim simulate throughput", f">= {TARGET_SIM_TICKS:,.0f} ticks/s",
            f"{best:,.0f} ticks/s wall (CLI, best); {cpu_best:,.0f} ticks per CPU-second",
            best >= TARGET_SIM_TICKS)
        if "class6_cli_best" in sim:
            add("ecu-sim simulate --vehicle class6 throughput", f">= {TARGET_SIM_TICKS:,.0f} ticks/s",
                f"{sim['class6_cli_best']:,.0f} ticks/s wall (CLI, best, Appendix D)",
                sim["class6_cli_best"] >= TARGET_SIM_TICKS)
    return rows


def table(result: Mapping[str, Any]) -> str:
    env = result["environment"]
    lines = [
        "## Conditions",
        "",
        f"{env['cpu']}, {env['cores']} cores, {env['memory_gb']} GB, Linux {env['kernel']}, "
        f"Python {env['python']} ({env['python_build']}), python-can {env['python_can']}, "
        f"cantools {env['cantools']}, ecu-sim {env['git']}, {env['date']}. "
        f"Load average at start {', '.join(f'{v:.2f}' for v in env['loadavg_start'])}, "
        f"at end {', '.join(f'{v:.2f}' for v in env.get('loadavg_end', ()))}.",
        "",
    ]
    phases = [p for p in WIRE_PHASES if p in result]
    if phases:
        lines += [
            "| phase | busy cores | ours | others (background) | steal |",
            "|---|---|---|---|---|",
        ]
        for phase in phases:
            c = result[phase]["conditions"]
            flood = result[phase].get("flood_frames_per_s")
            note = f" (flood {min(flood):.0f}..{max(flood):.0f} frames/s per port)" if flood else ""
            lines.append(f"| {phase}{note} | {_f(c['busy_cores'], 2)} | {_f(c['ours_cores'], 2)} | "
                         f"{_f(c['background_cores'], 2)} | {_f(c['steal_cores'], 2)} |")
        lines += ["", "## Period error and drift at the receiver (ms)", "",
                  "| phase | sender | frames | missing | mean | std | p50 abs | p99 abs | max abs | "
                  "drift, last frame | drift, schedule | drift fit /min |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for phase in phases:
            timing = result[phase]["timing"]
            for sender in SENDERS:
                t = timing.get(sender)
                if not t:
                    continue
                e = t["period_error"]
                seconds = result[phase]["seconds"]
                lines.append(
                    f"| {phase} ({seconds:.0f} s) | {sender} | {t['frames']} | {t['missing']} | "
                    f"{_f(e['mean_ms'])} | {_f(e['std_ms'])} | {_f(e['p50_ms'])} | {_f(e['p99_ms'])} | "
                    f"{_f(e['max_ms'])} | {_f(t['final_drift_ms'])} | {_f(t['schedule_drift_ms'])} | "
                    f"{_f(t['drift_rate_ms_per_min'], 4)} |")
        lines += ["", "Ours as a ratio to each baseline (below 1: ecu-sim is better):", "",
                  "| phase | baseline | p99 abs | std | max abs | schedule drift, ours vs baseline (ms) |",
                  "|---|---|---|---|---|---|"]
        for phase in phases:
            timing = result[phase]["timing"]
            ours = timing[OURS]
            for base_name in (PERIODIC, TESTBED):
                base = timing[base_name]

                def r(key: str, ours: Any = ours, base: Any = base) -> str:
                    return _f(analysis.ratio(ours["period_error"][key], base["period_error"][key]), 2)

                # a ratio of two drifts within the jitter says nothing: the values are shown instead
                drift = f"{_f(ours['schedule_drift_ms'])} vs {_f(base['schedule_drift_ms'])}"
                lines.append(f"| {phase} | {base_name} | {r('p99_ms')} | {r('std_ms')} | {r('max_ms')} | "
                             f"{drift} |")
    if "latency" in result:
        lines += ["", "## Latency: APP step to the first speed frame that reflects it (ms)", "",
                  "| receiver | steps | unanswered | mean | p50 | p99 | max |",
                  "|---|---|---|---|---|---|---|"]
        for name, lat in result["latency"].items():
            s = lat["latency"]
            lines.append(f"| {name} | {lat['steps']} | {lat['unanswered']} | {_f(s['mean_ms'], 1)} | "
                         f"{_f(s['p50_ms'], 1)} | {_f(s['p99_ms'], 1)} | {_f(s['max_ms'], 1)} |")
    if "quiet" in result:
        lines += ["", "## CPU and memory, quiet phase", "",
                  "| process | CPU per tick (us) | % of one core | with start-up (us/tick) | peak RSS (MB) |",
                  "|---|---|---|---|---|"]
        for name, cpu in result["quiet"]["cpu"].items():
            lines.append(f"| {name} | {_f(cpu['us_per_tick'], 0)} | {_f(cpu['pct_of_core'], 3)} | "
                         f"{_f(cpu.get('us_per_tick_with_startup'), 0)} | {_f(cpu['peak_rss_mb'], 1)} |")
        for phase in WIRE_PHASES[1:]:
            if phase in result:
                cpu = result[phase]["cpu"]
                lines.append(f"| ecu (during {phase}) | {_f(cpu['ecu']['us_per_tick'], 0)} | "
                             f"{_f(cpu['ecu']['pct_of_core'], 3)} | | {_f(cpu['ecu']['peak_rss_mb'], 1)} |")
    if "startup" in result:
        st = result["startup"]
        lines += ["", "## Start-up", "", "| command | runs (s) | median (s) | max (s) |", "|---|---|---|---|"]
        for command, v in st["first_frame_s"].items():
            lines.append(f"| {command}: start to first frame | {', '.join(f'{x:.3f}' for x in v['runs'])} | "
                         f"{_f(v['median'])} | {_f(v['max'])} |")
        lines.append(f"| python -c pass (bare interpreter) | | {_f(st['bare_interpreter_s'])} | |")
        imports = st["imports"]
        lines += ["", "Inside one start (ms): " + ", ".join(f"{k} {v}" for k, v in st["steps_ms"].items()),
                  "", f"Import time (python -X importtime, self time summed): {imports['total_ms']} ms; "
                  "by package: " + ", ".join(f"{k} {v}" for k, v in imports["by_package_ms"].items())]
    if "throughput" in result:
        tp = result["throughput"]
        lines += ["", "## Virtual-time throughput (loop ticks of ECU + CCM per second)", "",
                  "| what | best | median |", "|---|---|---|",
                  f"| ecu-sim simulate --duration 3600 (its own figure, wall clock) | "
                  f"{tp['simulate_cli_best']:,.0f} | {tp['simulate_cli_median']:,.0f} |"]
        if "class6_cli_best" in tp:
            lines.append(f"| ecu-sim simulate --vehicle class6 --route appendix-d --duration 3600 | "
                         f"{tp['class6_cli_best']:,.0f} | {tp['class6_cli_median']:,.0f} |")
        for link, label in (("direct", "in-process link"), ("virtual", "python-can virtual bus")):
            v = tp["in_process"][link]
            lines.append(f"| {label}, per wall second | {v['wall_best']:,.0f} | {v['wall_median']:,.0f} |")
            lines.append(f"| {label}, per CPU second | {v['cpu_best']:,.0f} | {v['cpu_median']:,.0f} |")
    rows = result.get("targets") or []
    if rows:
        lines += ["", "## Targets", "", "| target | limit | measured | met |", "|---|---|---|---|"]
        for row in rows:
            met = {True: "yes", False: "**no**", None: "not measured"}[row["met"]]
            note = f" ({row['note']})" if row["note"] else ""
            lines.append(f"| {row['target']} | {row['limit']} | {row['measured']} | {met}{note} |")
    return "\n".join(lines) + "\n"


def figure(timings: Mapping[str, Mapping[str, analysis.StreamTiming]],
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
