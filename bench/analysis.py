"""Pure arithmetic on what the receiver recorded: period error, drift, latency, import times.

Nothing here does I/O or reads a clock, so the unit tests can feed it made-up timestamps.

Definitions (all times in seconds, from the receiver's kernel timestamps):

- *interval* ``dt_i = t_i - t_(i-1)`` between consecutive frames of one stream. An interval
  with slots that had no frame (a lost frame, a tick skipped after a stall; see
  ``slot_numbers``) is a *gap*: counted, and left out of the period error.
- *period error* ``e_i = dt_i - period`` over the other intervals; reported as mean and
  standard deviation of ``e`` and p50/p99/max of ``|e|``.
- *cumulative drift* ``d_N = t_N - t_0 - N * period``, N counted in periods (missing slots
  included), so a sender that runs slow by 0.1 ms a period drifts 1 ms a second however long
  it runs. ``d_N`` of the last frame also carries that frame's own lateness, so the *schedule
  drift* is reported as well: the median of ``d`` over the last 10 s minus that over the first
  10 s, which a few late frames cannot move.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between ranks, NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def stdev(values: Sequence[float]) -> float:
    """Population standard deviation (the spread of what was measured, not an estimate)."""
    if not values:
        return math.nan
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / len(values))


@dataclass
class Summary:
    """Distribution of one quantity, in milliseconds."""

    n: int
    mean_ms: float
    std_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, values_s: Sequence[float], absolute: bool = False) -> Summary:
        """``absolute``: percentiles and max of |v| (period error); mean and std always signed."""
        magnitudes = [abs(v) for v in values_s] if absolute else list(values_s)
        return cls(
            n=len(values_s),
            mean_ms=1e3 * mean(values_s),
            std_ms=1e3 * stdev(values_s),
            p50_ms=1e3 * percentile(magnitudes, 50),
            p99_ms=1e3 * percentile(magnitudes, 99),
            max_ms=1e3 * max(magnitudes) if magnitudes else math.nan,
        )


@dataclass
class StreamTiming:
    """Period error and drift of one periodic stream of frames."""

    frames: int
    #: intervals that span more than one period (lost frames, skipped ticks): not period errors
    gaps: int
    #: slots without a frame, over all gaps
    missing: int
    period_error: Summary
    #: d_N of the last frame, and the largest |d| along the way
    final_drift_ms: float
    max_abs_drift_ms: float
    #: how far the schedule moved: median d over the last window minus over the first window
    schedule_drift_ms: float
    #: least-squares slope of the drift, in ms per minute
    drift_rate_ms_per_min: float
    span_s: float
    #: (seconds since the first frame, drift in ms), thinned for the figure
    drift_curve: list[tuple[float, float]] = field(default_factory=list)
    #: every period error in ms, for the histogram
    errors_ms: list[float] = field(default_factory=list)

    def brief(self) -> dict[str, Any]:
        """Everything but the long per-frame lists."""
        data = asdict(self)
        del data["drift_curve"], data["errors_ms"]
        return data


def slot_numbers(times: Sequence[float], period: float, window: int = 5,
                 tolerance: float = 0.1) -> list[int]:
    """The slot of the sender's schedule each frame belongs to, the first frame being slot 0.

    A frame is late, never early, against the schedule of the sender that sent it. So each frame
    takes the latest slot in which it is not early by more than ``tolerance`` periods against the
    schedule seen so far (the least ``t - slot * period`` of the last ``window`` frames, which
    follows a sender that drifts): a frame late by more than half a period stays in its slot, and
    a frame after a real gap (a lost frame, ticks ecu-sim skipped after a stall) moves on by the
    slots that had no frame. A frame that would be early even in the next slot shows that a
    recent jump counted too many slots (a late frame, then the overdue ones that python-can's
    thread sends at once); the jump is taken back one slot at a time.
    """
    tol = tolerance * period
    slots = [0]
    jumps: list[list[int]] = []  # [frame, slots skipped] of recent jumps, latest last

    def lateness(i: int, slot: int) -> float:
        reference = min(times[j] - slots[j] * period for j in range(max(0, i - window), i))
        return times[i] - reference - slot * period

    for i in range(1, len(times)):
        while jumps and jumps[-1][0] >= i - window and lateness(i, slots[-1] + 1) < -tol:
            jump = jumps[-1]
            for j in range(jump[0], i):
                slots[j] -= 1
            jump[1] -= 1
            if jump[1] == 0:
                jumps.pop()
        slot = slots[-1] + 1
        late = lateness(i, slot)
        while late - period >= -tol:
            slot += 1
            late -= period
        if slot > slots[-1] + 1:
            jumps.append([i, slot - slots[-1] - 1])
        slots.append(slot)
    return slots


def stream_timing(times: Sequence[float], period: float, curve_points: int = 2000,
                  drift_window_s: float = 10.0, schedule: bool = True) -> StreamTiming:
    """Period error and cumulative drift of frames sent every ``period`` seconds.

    ``schedule``: the sender keeps a schedule of slots (absolute deadlines) and may leave slots
    empty, so gaps are found with :func:`slot_numbers`. A sender without one (the testbed loop:
    every pass of its loop sends one frame, whenever that is) has frame N in slot N, and time it
    loses is drift.
    """
    if len(times) < 2:
        empty = Summary.of([])
        return StreamTiming(len(times), 0, 0, empty, math.nan, math.nan, math.nan, math.nan, 0.0)
    errors: list[float] = []
    drift: list[tuple[float, float]] = [(0.0, 0.0)]
    t0 = times[0]
    slots = slot_numbers(times, period) if schedule else list(range(len(times)))
    gaps = missing = 0
    for i in range(1, len(times)):
        lost = slots[i] - slots[i - 1] - 1
        if lost:
            gaps += 1
            missing += lost
        else:
            errors.append(times[i] - times[i - 1] - period)
        drift.append((times[i] - t0, times[i] - t0 - slots[i] * period))
    drifts = [d for _, d in drift]
    span = times[-1] - t0
    window = min(drift_window_s, span / 4.0)
    first = [d for t, d in drift if t <= window]
    last = [d for t, d in drift if t >= span - window]
    step = max(1, len(drift) // curve_points)
    return StreamTiming(
        frames=len(times),
        gaps=gaps,
        missing=missing,
        period_error=Summary.of(errors, absolute=True),
        final_drift_ms=1e3 * drifts[-1],
        max_abs_drift_ms=1e3 * max(abs(d) for d in drifts),
        schedule_drift_ms=1e3 * (percentile(last, 50) - percentile(first, 50)),
        drift_rate_ms_per_min=1e3 * 60.0 * _slope(drift),
        span_s=span,
        drift_curve=[(t, 1e3 * d) for t, d in drift[::step]],
        errors_ms=[1e3 * e for e in errors],
    )


def _slope(points: Sequence[tuple[float, float]]) -> float:
    if len(points) < 2:
        return math.nan
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mx, my = mean(xs), mean(ys)
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    if sxx == 0.0:
        return math.nan
    return math.fsum((x - mx) * (y - my) for x, y in points) / sxx


@dataclass
class Latency:
    """APP step to the first speed frame that reflects it."""

    steps: int
    #: steps never reflected before the next step (or the end of the recording)
    unanswered: int
    latency: Summary
    #: how many speed frames came after the step before the one that reflected it
    frames_before_reflected: dict[int, int]
    latencies_ms: list[float] = field(default_factory=list)

    def brief(self) -> dict[str, Any]:
        data = asdict(self)
        del data["latencies_ms"]
        return data


def step_latency(
    app: Sequence[tuple[float, float]], speed: Sequence[tuple[float, float]], threshold_pct: float = 50.0
) -> Latency:
    """Latency from each APP step to the first speed frame computed from it.

    ``app`` and ``speed`` are (time, value) in time order. The stimulus switches the pedal between
    a high and a low value; a speed frame "reflects" a high pedal when the speed went up since the
    previous speed frame and a low one when it went down, which for a truck at cruising speed is
    unambiguous (full pedal accelerates, a released pedal always decelerates). Only steps, i.e.
    APP frames whose value differs from the previous APP frame, are measured.
    """
    latencies: list[float] = []
    before: dict[int, int] = {}
    unanswered = 0
    steps = 0
    j = 1
    step_times = [
        (t, value) for i, (t, value) in enumerate(app)
        if i > 0 and (value > threshold_pct) != (app[i - 1][1] > threshold_pct)
    ]
    for index, (t_step, value) in enumerate(step_times):
        steps += 1
        next_step = step_times[index + 1][0] if index + 1 < len(step_times) else math.inf
        up = value > threshold_pct
        while j < len(speed) and speed[j][0] <= t_step:
            j += 1
        skipped = 0
        k = j
        found = False
        while k < len(speed) and speed[k][0] < next_step:
            delta = speed[k][1] - speed[k - 1][1]
            if (delta > 0.0) == up and delta != 0.0:
                latencies.append(speed[k][0] - t_step)
                before[skipped] = before.get(skipped, 0) + 1
                found = True
                break
            skipped += 1
            k += 1
        if not found:
            unanswered += 1
    return Latency(steps, unanswered, Summary.of(latencies), before, [1e3 * v for v in latencies])


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


@dataclass
class ImportTimes:
    """``python -X importtime`` output, summed up (microseconds as printed, reported in ms)."""

    total_ms: float
    #: self time summed by top-level package (can, cantools, ecu_sim, asyncio, ...)
    by_package_ms: dict[str, float]
    #: cumulative time of the imports the program itself triggered (nesting level 1)
    top_level_ms: dict[str, float]


def import_times(stderr_lines: Iterable[str], top: int = 12) -> ImportTimes:
    by_package: dict[str, float] = {}
    top_level: dict[str, float] = {}
    total = 0.0
    for line in stderr_lines:
        match = _IMPORT_LINE.match(line.rstrip("\n"))
        if match is None:
            continue
        self_us, cumulative_us, indent, name = match.groups()
        package = name.split(".")[0]
        by_package[package] = by_package.get(package, 0.0) + int(self_us) / 1e3
        total += int(self_us) / 1e3
        if len(indent) <= 1:
            top_level[name] = top_level.get(name, 0.0) + int(cumulative_us) / 1e3

    def biggest(values: dict[str, float]) -> dict[str, float]:
        ranked = sorted(values.items(), key=lambda item: -item[1])
        return {k: round(v, 1) for k, v in ranked[:top]}

    return ImportTimes(round(total, 1), biggest(by_package), biggest(top_level))


def ratio(ours: float, theirs: float) -> float:
    """ours / theirs, NaN when undefined; below 1 means ours is smaller (better for errors)."""
    if not (math.isfinite(ours) and math.isfinite(theirs)) or theirs == 0.0:
        return math.nan
    return ours / theirs
