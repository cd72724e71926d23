"""A run's results on disk: the Markdown table, the JSON, the figure, written when a run ends and
written again from its raw recordings (``--reanalyze``).

One writer for both, so a run reanalyzed reads exactly like one just finished.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from bench import analysis, figure, latency, report, timing


def write(folder: Path, result: dict[str, Any]) -> None:
    """The targets into the result, then the table (also on stdout) and the JSON into ``folder``."""
    result["targets"] = report.targets(result)
    table = report.table(result)
    (folder / "table.md").write_text(table, encoding="utf-8")
    with open(folder / "bench.json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, default=_json_default)
    print(table)


def draw(folder: Path, result: dict[str, Any], timings: dict[str, dict[str, analysis.StreamTiming]],
         latencies: dict[str, analysis.Latency]) -> Path | None:
    """The PNG, or None without matplotlib."""
    return figure.draw(timings, latencies, folder / "bench.png", title=figure.title_of(result))


def reanalyze(folder: Path, with_figure: bool) -> int:
    """Recompute timing and latency of a finished run from its raw recordings; rewrite its results."""
    with open(folder / "bench.json", encoding="utf-8") as f:
        result: dict[str, Any] = json.load(f)
    timings: dict[str, dict[str, analysis.StreamTiming]] = {}
    for phase in report.WIRE_PHASES:
        if phase not in result or "repetitions" not in result[phase]:
            continue
        for rep in result[phase]["repetitions"]:
            with open(folder / "raw" / f"{phase}-{rep['rep']}.json", encoding="ascii") as f:
                frames = json.load(f)["frames"]
            timings[phase] = timing.wire_timings(frames, *rep["window"])
            rep["timing"] = {name: t.brief() for name, t in timings[phase].items()}
            rep["ratios"] = timing.ratios(timings[phase], rep["rep"], rep["conditions"]["background_cores"])
        result[phase].update(timing.phase_summary(result[phase]["repetitions"]))
    lat: dict[str, analysis.Latency] = {}
    if "latency" in result:
        with open(folder / "raw" / "latency.json", encoding="ascii") as f:
            lat = latency.latencies(json.load(f)["frames"])
        result["latency"] = {name: v.brief() for name, v in lat.items()}
    write(folder, result)
    if with_figure:
        draw(folder, result, timings, lat)
    return 0


def _json_default(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)
