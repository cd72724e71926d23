"""The results as a Markdown table and a list of targets met or missed (the figure: bench/figure.py).

The runtime never imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from bench import analysis, levers, probe
from bench.repeats import NOISY_BACKGROUND_CORES as NOISY

OURS = "ecu-sim (ECU)"
PERIODIC = "send_periodic"
TESTBED = "testbed loop"
PROBED = "ecu-sim probed"
SENDERS = (OURS, "ecu-sim ccm", PERIODIC, TESTBED, PROBED)
WIRE_PHASES = ("quiet", "flood", "hog", "hog-rt")

#: target name -> limit; what each means is in docs/performance.md
TARGET_P99_MS = 1.0
TARGET_DRIFT_MS = 2.0
TARGET_CPU_PCT = 0.5
#: issue 18: CPU per real-time tick in the quiet phase, median of the repetitions
TARGET_CPU_TICK_PCT = 0.25
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

    quiet = repetitions(result, "quiet")
    ours = _median_rep(quiet, OURS)
    if quiet and ours:
        p99s = [r["timing"][OURS]["period_error"]["p99_ms"] for r in quiet]
        p99 = analysis.percentile(p99s, 50)
        add("p99 of abs period error, quiet (median of repetitions)", f"<= {TARGET_P99_MS} ms",
            f"{p99:.3f} ms", p99 <= TARGET_P99_MS)
    for phase in WIRE_PHASES:
        v = _get(result, phase, "verdict")
        if v:
            measured = (f"median {_f(v['median']['p99'], 2)}, worst {_f(v['worst']['p99'], 2)} "
                        f"over {v['counted']} counted repetitions ({v['excluded']} too noisy)")
            add(f"p99 below send_periodic's in every repetition, {phase}", "ratio < 1 in each",
                measured, v["p99_better_in_every"])
    if ours:
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
        us = _get(result, "quiet", "median_us_per_tick", name)
        if us is not None:
            pct = us / 1e3  # us per 100 ms tick -> % of a core
            floor = _get(result, "quiet", "median_us_per_tick", "floor")
            beside = "" if floor is None else f"; the flat loop of the same work {floor:.0f} us/tick"
            add(f"CPU at 10 Hz, {label} (median of repetitions)", f"<= {TARGET_CPU_TICK_PCT} % of one core",
                f"{pct:.3f} % ({us:.0f} us/tick{beside})", pct <= TARGET_CPU_TICK_PCT)
    for name, label in (("ecu", "ecu-sim"), ("ccm", "ecu-sim ccm")):
        rss = [r["cpu"][name]["peak_rss_mb"] for r in quiet if name in r["cpu"]]
        if rss:
            add(f"peak RSS, {label}", f"<= {TARGET_RSS_MB:.0f} MB", f"{max(rss):.1f} MB",
                max(rss) <= TARGET_RSS_MB)
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


def repetitions(result: Mapping[str, Any], phase: str) -> list[dict[str, Any]]:
    """The repetitions of a timing phase, oldest first (none when the phase did not run)."""
    reps = _get(result, phase, "repetitions")
    return list(reps) if reps else []


def _median_rep(reps: list[dict[str, Any]], sender: str) -> dict[str, Any] | None:
    """The sender's timing in the repetition with its median p99: one run to quote for drift."""
    have: list[dict[str, Any]] = [r["timing"][sender] for r in reps if sender in r["timing"]]
    if not have:
        return None
    have.sort(key=lambda t: t["period_error"]["p99_ms"])
    return have[len(have) // 2]


def _rep_label(phase: str, rep: Mapping[str, Any]) -> str:
    return f"{phase} #{rep['rep'] + 1}"


def _interval(iv: Mapping[str, Any]) -> str:
    return f"{_f(iv['value'], 2)} [{_f(iv['lo'], 2)}, {_f(iv['hi'], 2)}]"


def repetition_tables(result: Mapping[str, Any]) -> list[str]:
    """Per repetition its conditions and ratios; per phase the verdict over the counted ones."""
    phases = [p for p in WIRE_PHASES if repetitions(result, p)]
    if not phases:
        return []
    lines = ["## Repetitions: ecu-sim's period error over send_periodic's", "",
             "Ratio of ecu-sim's (ECU) p99 and max of |period error| to send_periodic's in the same "
             "repetition, with a 95 % bootstrap interval over frames (seed fixed). Background: busy "
             "cores (what is neither idle, steal nor interrupt time in /proc/stat) minus the CPU time "
             "of every process of the phase (senders, load, receiver, orchestrator, the kernel's "
             "ksoftirqd threads); above "
             f"{NOISY:.1f} the repetition is shown but not counted.",
             "",
             "| repetition | started first | background cores | steal | p99 ratio [95 % CI] | "
             "max ratio [95 % CI] | counted |",
             "|---|---|---|---|---|---|---|"]
    for phase in phases:
        for rep in repetitions(result, phase):
            c = rep["conditions"]
            ratios = rep["ratios"]
            counted = "**no, too noisy**" if ratios["noisy"] else "yes"
            lines.append(f"| {_rep_label(phase, rep)} | {rep['start_order'][0]} | "
                         f"{_f(c['background_cores'], 2)} | {_f(c['steal_cores'], 2)} | "
                         f"{_interval(ratios['p99'])} | {_interval(ratios['max'])} | {counted} |")
    lines += ["", "| phase | counted | too noisy | p99 ratio, median | p99 ratio, worst | "
              "max ratio, median | max ratio, worst | p99 below send_periodic's in every counted one |",
              "|---|---|---|---|---|---|---|---|"]
    for phase in phases:
        v = result[phase]["verdict"]
        every = {True: "yes", False: "**no**", None: "no verdict"}[v["p99_better_in_every"]]
        lines.append(f"| {phase} | {v['counted']} | {v['excluded']} | {_f(v['median']['p99'], 2)} | "
                     f"{_f(v['worst']['p99'], 2)} | {_f(v['median']['max'], 2)} | "
                     f"{_f(v['worst']['max'], 2)} | {every} |")
    return [*lines, ""]


def probe_tables(result: Mapping[str, Any]) -> list[str]:
    """What the instrumented ECU saw of its own ticks, summed over each phase's repetitions."""
    rows = {p: [r["probe"] for r in repetitions(result, p) if r.get("probe")] for p in WIRE_PHASES}
    rows = {p: v for p, v in rows.items() if v}
    return probe.tables(rows) if rows else []


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
    phases = [p for p in WIRE_PHASES if repetitions(result, p)]
    if phases:
        lines += [
            "| repetition | busy cores | ours | others (background) | interrupts | steal | load average |",
            "|---|---|---|---|---|---|---|",
        ]
        for phase in phases:
            for rep in repetitions(result, phase):
                c = rep["conditions"]
                flood = rep.get("flood_frames_per_s")
                note = f" (flood {min(flood):.0f}..{max(flood):.0f} frames/s per port)" if flood else ""
                noisy = " **too noisy**" if rep["ratios"]["noisy"] else ""
                lines.append(f"| {_rep_label(phase, rep)}{note} | {_f(c['busy_cores'], 2)} | "
                             f"{_f(c['ours_cores'], 2)} | {_f(c['background_cores'], 2)}{noisy} | "
                             f"{_f(c.get('interrupt_cores'), 2)} | {_f(c['steal_cores'], 2)} | "
                             f"{_f(c['loadavg'][0], 2)} |")
        lines += ["", *repetition_tables(result)]
        lines += ["## Period error and drift at the receiver (ms)", "",
                  "| repetition | sender | frames | missing | mean | std | p50 abs | p99 abs | max abs | "
                  "drift, last frame | drift, schedule | drift fit /min |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for phase in phases:
            for rep in repetitions(result, phase):
                for sender in SENDERS:
                    t = rep["timing"].get(sender)
                    if not t:
                        continue
                    e = t["period_error"]
                    lines.append(
                        f"| {_rep_label(phase, rep)} ({rep['seconds']:.0f} s) | {sender} | {t['frames']} | "
                        f"{t['missing']} | {_f(e['mean_ms'])} | {_f(e['std_ms'])} | {_f(e['p50_ms'])} | "
                        f"{_f(e['p99_ms'])} | {_f(e['max_ms'])} | {_f(t['final_drift_ms'])} | "
                        f"{_f(t['schedule_drift_ms'])} | {_f(t['drift_rate_ms_per_min'], 4)} |")
        lines += ["", *probe_tables(result)]
    if "levers" in result:
        lines += ["", *levers.tables(result["levers"])]
    if "latency" in result:
        lines += ["", "## Latency: APP step to the first speed frame that reflects it (ms)", "",
                  "| receiver | steps | unanswered | mean | p50 | p99 | max |",
                  "|---|---|---|---|---|---|---|"]
        for name, lat in result["latency"].items():
            s = lat["latency"]
            lines.append(f"| {name} | {lat['steps']} | {lat['unanswered']} | {_f(s['mean_ms'], 1)} | "
                         f"{_f(s['p50_ms'], 1)} | {_f(s['p99_ms'], 1)} | {_f(s['max_ms'], 1)} |")
    if repetitions(result, "quiet"):
        quiet = repetitions(result, "quiet")
        lines += ["", "## CPU and memory, quiet phase (CPU per tick in us, each repetition)", "",
                  "| process | " + " | ".join(f"#{r['rep'] + 1}" for r in quiet) +
                  " | median | % of one core (median) | peak RSS (MB) |",
                  "|---|" + "---|" * (len(quiet) + 3)]
        for name, median in result["quiet"]["median_us_per_tick"].items():
            runs = " | ".join(_f(r["cpu"][name]["us_per_tick"], 0) for r in quiet)
            rss = max(r["cpu"][name]["peak_rss_mb"] for r in quiet)
            lines.append(f"| {name} | {runs} | {_f(median, 0)} | {_f(median / 1e3, 3)} | {_f(rss, 1)} |")
        for phase in WIRE_PHASES[1:]:
            if repetitions(result, phase):
                median = result[phase]["median_us_per_tick"]["ecu"]
                lines.append(f"| ecu (during {phase}) | " + " | ".join(
                    _f(r["cpu"]["ecu"]["us_per_tick"], 0) for r in repetitions(result, phase)) +
                    " |" * max(0, len(quiet) - len(repetitions(result, phase))) +
                    f" | {_f(median, 0)} | {_f(median / 1e3, 3)} | |")
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
