"""Two versions of a controller compared trace by trace: is the patched controller the same one?

``campaign compare A/results.csv B/results.csv --traces`` reads each case's per-tick traces
(``--keep-traces``: ``A/traces/ID.csv``) and, for every pair of a run of A and a run of B, aligns
them tick by tick (the same period and the same start: time) or, for a case on a route, by the
distance the truck has driven, and takes the difference of the speed and of the commands (APP,
and where the trace has them the engine demand of TSC1 and the brake demand of XBR).

Real-time runs of one version differ from each other (when a frame falls between two ticks), so a
case may be repeated. The *spread* of a version is the largest difference between two of its own
runs; the verdict compares the difference between versions with it, for the speed and for the
command separately, each with its tolerance:

- *differs*: even the closest pair of runs of A and B differ by more than tolerance plus spread;
- *same*: even the farthest pair differ by no more than tolerance plus spread;
- *inconclusive*: in between, or a case failed or is missing in one version's table.
"""

from __future__ import annotations

import bisect
import csv
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ecu_sim.campaign.compare import save_png, settings_of
from ecu_sim.campaign.matrix import base_id
from ecu_sim.campaign.results import read_table
from ecu_sim.campaign.row import OK, Row
from ecu_sim.errors import ConfigError, needs_extra

#: the commands a trace may carry: the pedal, TSC1's engine demand, XBR's brake demand
COMMANDS = ("app_pct", "engine_demand_pct", "brake_pct")
SAME, DIFFERS, INCONCLUSIVE = "same", "differs", "inconclusive"


@dataclass(frozen=True)
class Trace:
    """One run's series: time from its first tick, speed, distance and its commands."""

    t_s: list[float]
    speed_kph: list[float]
    distance_m: list[float]
    commands: dict[str, list[float]]


@dataclass(frozen=True)
class TraceDifference:
    """Speed and command difference of two runs, aligned."""

    speed_max: float
    speed_rms: float
    command_max: float
    command_rms: float
    #: the first time (s, the first run's) either is beyond its tolerance; None: never
    first_s: float | None


@dataclass
class TraceVerdict:
    case: str
    settings: str
    verdict: str
    reason: str = ""
    #: run 1 of A against run 1 of B
    first: TraceDifference | None = None
    spread_speed: float = 0.0
    spread_command: float = 0.0
    pairs: list[tuple[Trace, Trace]] = field(default_factory=list, repr=False)

    def line(self) -> str:
        head = f"{self.verdict}: case {self.case}{self.settings}"
        if self.first is None:
            return f"{head}: {self.reason}"
        d = self.first
        when = "never" if d.first_s is None else f"at {d.first_s:.1f} s"
        return (f"{head}: speed difference max {d.speed_max:.3f} rms {d.speed_rms:.3f} km/h, command "
                f"max {d.command_max:.2f} rms {d.command_rms:.2f} %, beyond tolerance {when}; spread "
                f"within versions {self.spread_speed:.3f} km/h, {self.spread_command:.2f} %")


@dataclass(frozen=True)
class Tolerance:
    speed_kph: float = 0.5
    command_pct: float = 2.0


def read_trace(path: Path) -> Trace:
    try:
        with open(path, newline="", encoding="ascii") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise ConfigError(f"cannot read the trace {path}: {exc.strerror}; run the campaign with "
                          "--keep-traces") from None
    if not rows or "speed_kph" not in rows[0]:
        raise ConfigError(f"{path} is not a campaign's trace (no speed_kph column)")
    start = float(rows[0]["t_s"])
    return Trace([float(r["t_s"]) - start for r in rows], [float(r["speed_kph"]) for r in rows],
                 [float(r["distance_m"]) for r in rows],
                 {name: [float(r[name]) for r in rows] for name in COMMANDS if name in rows[0]})


def difference(a: Trace, b: Trace, by_distance: bool, tolerance: Tolerance) -> TraceDifference:
    """``b`` against ``a``, over the ticks (or the road) both cover."""
    pairs = list(_aligned(a, b, by_distance))
    if not pairs:
        return TraceDifference(math.inf, math.inf, math.inf, math.inf, 0.0)
    names = [name for name in COMMANDS if name in a.commands and name in b.commands]
    speed = [b.speed_kph[j] - a.speed_kph[i] for i, j in pairs]
    command = [max((_nearest(a.commands[n][i], b.commands[n], j) for n in names), default=0.0)
               for i, j in pairs]
    first = next((a.t_s[i] for (i, _), dv, dc in zip(pairs, speed, command, strict=True)
                  if abs(dv) > tolerance.speed_kph or dc > tolerance.command_pct), None)
    return TraceDifference(max(map(abs, speed)), _rms(speed), max(command), _rms(command), first)


def _nearest(value: float, series: list[float], at: int) -> float:
    """The command difference at a tick: against the other run's command at that tick or either
    side of it. A frame that fell one tick earlier or later in one run (real time) is no
    difference; a step that stays shifted for longer is."""
    return min(abs(series[k] - value) for k in range(max(0, at - 1), min(len(series), at + 2)))


def _aligned(a: Trace, b: Trace, by_distance: bool) -> Iterator[tuple[int, int]]:
    """(index in ``a``, index in ``b``) of each tick both cover: the same tick, or on a route the
    first tick of ``b`` at or past the place ``a`` was."""
    if not by_distance:
        for i in range(min(len(a.t_s), len(b.t_s))):
            yield i, i
        return
    for i, where in enumerate(a.distance_m):
        j = bisect.bisect_left(b.distance_m, where)
        if j >= len(b.distance_m):
            return
        yield i, j


def _rms(values: Sequence[float]) -> float:
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else 0.0


def compare(a_path: str, b_path: str, tolerance: Tolerance) -> list[TraceVerdict]:
    """A verdict per case of A's table (by id, its repetitions together)."""
    runs_a, runs_b = _runs(read_table(a_path)), _runs(read_table(b_path))
    folders = Path(a_path).parent / "traces", Path(b_path).parent / "traces"
    return [_verdict(case, rows, runs_b.get(case, []), folders, tolerance) for case, rows in runs_a.items()]


def _runs(rows: list[Row]) -> dict[str, list[Row]]:
    found: dict[str, list[Row]] = {}
    for row in rows:
        found.setdefault(base_id(row.id), []).append(row)
    return found


def _verdict(case: str, rows_a: list[Row], rows_b: list[Row],
             folders: tuple[Path, Path], tolerance: Tolerance) -> TraceVerdict:
    settings = settings_of(rows_a[0])
    if not rows_b:
        return TraceVerdict(case, settings, INCONCLUSIVE, "missing from the second table")
    failed_a, failed_b = (any(r.status != OK for r in rows) for rows in (rows_a, rows_b))
    if failed_a or failed_b:
        if failed_a != failed_b and all(r.status != OK for r in (rows_b if failed_b else rows_a)):
            only = "B" if failed_b else "A"
            return TraceVerdict(case, settings, DIFFERS, f"every run failed in {only} only")
        return TraceVerdict(case, settings, INCONCLUSIVE, "a run failed")
    a = [read_trace(folders[0] / f"{row.id}.csv") for row in rows_a]
    b = [read_trace(folders[1] / f"{row.id}.csv") for row in rows_b]
    # a route (grade_file: grades by distance or an elevation route) is aligned by the road
    by_distance = bool(rows_a[0].settings.get("run.grade_file"))
    between = [difference(x, y, by_distance, tolerance) for x, y in itertools.product(a, b)]
    within = [difference(x, y, by_distance, tolerance)
              for runs in (a, b) for x, y in itertools.combinations(runs, 2)]
    spread_v = max((d.speed_max for d in within), default=0.0)
    spread_c = max((d.command_max for d in within), default=0.0)
    limit_v, limit_c = tolerance.speed_kph + spread_v, tolerance.command_pct + spread_c
    if min(d.speed_max for d in between) > limit_v or min(d.command_max for d in between) > limit_c:
        verdict = DIFFERS
    elif all(d.speed_max <= limit_v and d.command_max <= limit_c for d in between):
        verdict = SAME
    else:
        verdict = INCONCLUSIVE
    return TraceVerdict(case, settings, verdict, first=between[0], spread_speed=spread_v,
                   spread_command=spread_c, pairs=[(a[0], b[0])])


def summary(verdicts: Sequence[TraceVerdict]) -> str:
    counts = {name: sum(1 for v in verdicts if v.verdict == name) for name in (SAME, DIFFERS, INCONCLUSIVE)}
    return f"{len(verdicts)} cases: " + ", ".join(f"{n} {name}" for name, n in counts.items())


def plot(verdicts: Sequence[TraceVerdict], folder: str) -> list[Path]:
    """A PNG per case that is not *same*: both versions' first runs and their difference."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise ConfigError(needs_extra("--png", "matplotlib", "campaign")) from None
    out = Path(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {out}: {exc.strerror}") from None
    written = []
    for verdict in verdicts:
        if verdict.verdict == SAME or not verdict.pairs:
            continue
        a, b = verdict.pairs[0]
        figure, (speed, command, delta) = pyplot.subplots(3, 1, figsize=(9, 8), sharex=True)
        n = min(len(a.t_s), len(b.t_s))
        speed.plot(a.t_s, a.speed_kph, label="A")
        speed.plot(b.t_s, b.speed_kph, label="B")
        speed.set_ylabel("speed, km/h")
        speed.legend()
        for name in a.commands:
            if name in b.commands:
                command.plot(a.t_s, a.commands[name], label=f"A {name}")
                command.plot(b.t_s, b.commands[name], label=f"B {name}")
        command.set_ylabel("command, %")
        command.legend(fontsize=7)
        delta.plot(a.t_s[:n], [b.speed_kph[i] - a.speed_kph[i] for i in range(n)], label="speed B - A")
        delta.set_ylabel("difference")
        delta.set_xlabel("time since the first tick, s")
        delta.legend()
        figure.suptitle(f"{verdict.verdict}: case {verdict.case}{verdict.settings}", fontsize=9)
        path = out / f"{verdict.case}.png"
        save_png(figure, str(path))
        written.append(path)
    return written
