"""The tick probe's summaries (ecu_sim.runtime.probe) as tables: where late ticks come from.

The probed ECU writes one summary per repetition; a phase's repetitions are added up here
(counts summed, means weighted by ticks), so the tables read as one long run per phase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecu_sim.runtime.probe import CAUSES, LABELS


def combine(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several repetitions' summaries as one: counts summed, per-step means weighted by ticks."""
    ticks = sum(s["ticks"] for s in summaries)

    def weighted(key: str, label: str) -> float:
        return sum(s[key][label] * s["ticks"] for s in summaries) / ticks if ticks else 0.0

    histogram: dict[str, int] = {}
    for s in summaries:
        for name, count in s["lateness_histogram_us"].items():
            histogram[name] = histogram.get(name, 0) + count
    by_step: dict[str, int] = {}
    for s in summaries:
        for name, count in s["gc"]["by_step"].items():
            by_step[name] = by_step.get(name, 0) + count
    return {
        "ticks": ticks,
        "late": sum(s["late"] for s in summaries),
        "late_threshold_us": summaries[0]["late_threshold_us"] if summaries else 0.0,
        "late_by_cause": {c: sum(s["late_by_cause"].get(c, 0) for s in summaries) for c in CAUSES},
        "lateness_histogram_us": histogram,
        "mean_wall_us": {label: weighted("mean_wall_us", label) for label in LABELS},
        "mean_cpu_us": {label: weighted("mean_cpu_us", label) for label in LABELS},
        "worst_us": {k: max(s["worst_us"][k] for s in summaries) for k in summaries[0]["worst_us"]}
        if summaries else {},
        "gc": {"pauses": sum(s["gc"]["pauses"] for s in summaries),
               "total_us": sum(s["gc"]["total_us"] for s in summaries),
               "max_us": max((s["gc"]["max_us"] for s in summaries), default=0.0), "by_step": by_step},
    }


def tables(by_phase: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """Markdown: lateness histogram, late ticks by cause, time and CPU per step, GC pauses."""
    combined = {phase: combine(s) for phase, s in by_phase.items()}
    phases = list(combined)
    first = combined[phases[0]]
    bins = list(first["lateness_histogram_us"])
    lines = ["## Where the instrumented ECU's ticks went (tick probe, all repetitions)", "",
             "Lateness of each tick's send after its deadline, on the sender's clock (ticks per bin, us):",
             "", "| phase | ticks | " + " | ".join(bins) + " |", "|---|---|" + "---|" * len(bins)]
    for phase in phases:
        h = combined[phase]["lateness_histogram_us"]
        lines.append(f"| {phase} | {combined[phase]['ticks']} | " + " | ".join(str(h.get(b, 0)) for b in bins)
                     + " |")
    lines += ["", f"Ticks sent more than {first['late_threshold_us']:.0f} us late, by the step that "
              "contributed most:", "",
              "| phase | late | " + " | ".join(CAUSES) + " |", "|---|---|" + "---|" * len(CAUSES)]
    for phase in phases:
        c = combined[phase]
        lines.append(f"| {phase} | {c['late']} | " + " | ".join(str(c["late_by_cause"][k]) for k in CAUSES)
                     + " |")
    lines += ["", "Mean per tick, CPU time of the loop's thread (wall time in brackets), us:", "",
              "| step | " + " | ".join(phases) + " |", "|---|" + "---|" * len(phases)]
    for label in LABELS:
        cells = [f"{combined[p]['mean_cpu_us'][label]:.1f} ({combined[p]['mean_wall_us'][label]:.0f})"
                 for p in phases]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    totals = [f"{sum(combined[p]['mean_cpu_us'].values()):.1f}" for p in phases]
    lines.append("| **all steps (CPU)** | " + " | ".join(totals) + " |")
    lines += ["", "| phase | worst lateness (us) | worst wake-up | worst step | worst send | GC pauses | "
              "GC total (us) | longest GC (us) | GC by step |", "|---|---|---|---|---|---|---|---|---|"]
    for phase in phases:
        c = combined[phase]
        w, g = c["worst_us"], c["gc"]
        steps = ", ".join(f"{k} {v}" for k, v in sorted(g["by_step"].items())) or "none"
        lines.append(f"| {phase} | {w.get('lateness', 0):.0f} | {w.get('wake-up', 0):.0f} | "
                     f"{w.get('step', 0):.0f} | {w.get('send', 0):.0f} | {g['pauses']} | "
                     f"{g['total_us']:.0f} | {g['max_us']:.0f} | {steps} |")
    return [*lines, ""]
