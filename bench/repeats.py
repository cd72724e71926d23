"""Pure arithmetic over the repetitions of a timing phase: ratios, bootstrap intervals, verdicts.

One run of 300 frames cannot tell a better tail from a lucky minute: its p99 is its third-largest
error. So a phase is repeated, each repetition is reduced to the ratio of ecu-sim's statistic
to send_periodic's in the same minutes, and the verdict reads the ratios of every repetition
whose background was quiet enough to count. The confidence interval of one repetition comes
from resampling its frames (bootstrap) with a fixed seed, so the same recording always gives
the same report.

Nothing here reads a clock or a file: the unit tests feed it made-up errors.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.analysis import percentile

#: background load (busy cores outside the benchmark's own processes) above which a repetition
#: says more about the neighbours than about the senders: shown, not counted
NOISY_BACKGROUND_CORES = 0.3
#: resamples of the bootstrap, and its seed: a fixed seed makes a report reproducible
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 18

Statistic = Callable[[Sequence[float]], float]


def p99(values: Sequence[float]) -> float:
    """99th percentile of absolute values: the tail the issue is about."""
    return percentile([abs(v) for v in values], 99)


def worst(values: Sequence[float]) -> float:
    """Largest absolute value, NaN when empty."""
    return max((abs(v) for v in values), default=math.nan)


STATISTICS: dict[str, Statistic] = {"p99": p99, "max": worst}


@dataclass(frozen=True)
class Interval:
    """A ratio and its bootstrap confidence interval (lo, hi) at ``level``."""

    value: float
    lo: float
    hi: float
    level: float = 0.95


def ratio_interval(ours: Sequence[float], theirs: Sequence[float], statistic: Statistic,
                   resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                   level: float = 0.95) -> Interval:
    """statistic(ours) / statistic(theirs), with a percentile bootstrap interval over frames.

    Each resample draws both streams' errors with replacement, independently (they are different
    senders in the same minutes); the interval is the central ``level`` of the resampled ratios.
    """
    value = _ratio(statistic(ours), statistic(theirs))
    if not ours or not theirs or not math.isfinite(value):
        return Interval(value, math.nan, math.nan, level)
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        a = rng.choices(ours, k=len(ours))
        b = rng.choices(theirs, k=len(theirs))
        r = _ratio(statistic(a), statistic(b))
        if math.isfinite(r):
            ratios.append(r)
    tail = 100.0 * (1.0 - level) / 2.0
    return Interval(value, percentile(ratios, tail), percentile(ratios, 100.0 - tail), level)


def _ratio(ours: float, theirs: float) -> float:
    if not (math.isfinite(ours) and math.isfinite(theirs)) or theirs == 0.0:
        return math.nan
    return ours / theirs


@dataclass(frozen=True)
class Repetition:
    """One repetition of a phase reduced to what the verdict needs."""

    index: int
    background_cores: float
    #: statistic name ("p99", "max") -> ecu-sim's over send_periodic's, with its interval
    ratios: dict[str, Interval]

    @property
    def noisy(self) -> bool:
        """Too much else ran: NaN (not measured) counts as noisy, so it never passes silently."""
        return not (self.background_cores <= NOISY_BACKGROUND_CORES)


def repetition(index: int, ours: Sequence[float], theirs: Sequence[float],
               background_cores: float) -> Repetition:
    """Ratios of p99 and max of ``ours`` to ``theirs`` (period errors of one repetition)."""
    return Repetition(index, background_cores,
                      {name: ratio_interval(ours, theirs, stat) for name, stat in STATISTICS.items()})


@dataclass(frozen=True)
class Verdict:
    """A phase over its repetitions: median and worst ratio of the counted ones."""

    counted: int
    excluded: int
    #: statistic -> median of the counted repetitions' ratios
    median: dict[str, float]
    #: statistic -> the largest ratio among the counted repetitions
    worst: dict[str, float]
    #: every counted repetition had ecu-sim's p99 below send_periodic's
    p99_better_in_every: bool | None


def verdict(repetitions: Sequence[Repetition]) -> Verdict:
    """Median and worst-repetition ratios over the repetitions that were quiet enough to count.

    With none counted the verdict is None (no evidence either way), never a pass.
    """
    counted = [r for r in repetitions if not r.noisy]
    median: dict[str, float] = {}
    worst_of: dict[str, float] = {}
    for name in STATISTICS:
        values = [r.ratios[name].value for r in counted if math.isfinite(r.ratios[name].value)]
        median[name] = percentile(values, 50)
        worst_of[name] = max(values, default=math.nan)
    p99s = [r.ratios["p99"].value for r in counted]
    better = None if not p99s else all(math.isfinite(v) and v < 1.0 for v in p99s)
    return Verdict(len(counted), len(repetitions) - len(counted), median, worst_of, better)


def start_order(names: Sequence[str], index: int) -> list[str]:
    """The order in which repetition ``index`` starts its senders: reversed every other time.

    Started first, a sender's grid of deadlines lies earlier in the period than the others'; which
    one runs into whose frames then alternates instead of favouring one sender every time.
    """
    return list(names) if index % 2 == 0 else list(reversed(names))
