"""Two campaigns' results side by side: which key figures got worse, case by case.

Cases are matched by id, so both tables must come from the same campaign file (run before and
after a change). A figure is worse when it moved in its bad direction by more than the larger of
a fraction of its value before and an absolute allowance for that figure. A figure that had a
value and has none (a run that no longer settles), a case that ran and now fails, and a case
missing from the second table all count as worse: a gate must not pass on a campaign that lost
cases.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ecu_sim.campaign.figures import FIGURES
from ecu_sim.campaign.results import read_table
from ecu_sim.campaign.row import OK, Row
from ecu_sim.errors import ConfigError, needs_extra

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ORDERED = [name for name, better in FIGURES.items() if better]


@dataclass
class Report:
    before: list[Row]
    after: list[Row]
    #: (case id, what got worse)
    worse: list[tuple[str, str]] = field(default_factory=list)
    better: int = 0
    hashes_changed: int = 0
    new_cases: int = 0

    def lines(self) -> Iterator[str]:
        for case, text in self.worse:
            yield f"worse: case {case}: {text}"
        cases = {case for case, _ in self.worse}
        yield (f"{len(self.before)} cases before, {len(self.after)} after ({self.new_cases} new): "
               f"{len(cases)} worse, {self.better} better in some figure and worse in none, "
               f"{self.hashes_changed} with another frame stream")


def parse_tolerances(items: Sequence[str]) -> dict[str, float]:
    found = {}
    for item in items:
        name, _, amount = item.partition("=")
        if name not in ORDERED:
            raise ConfigError(f"--tolerance {item}: the figures that can get worse are {', '.join(ORDERED)}")
        try:
            found[name] = float(amount)
        except ValueError:
            raise ConfigError(f"--tolerance {item}: the amount must be a number") from None
    return found


def compare(before_path: str, after_path: str, relative: float, tolerances: dict[str, float]) -> Report:
    before, after = read_table(before_path), read_table(after_path)
    report = Report(before, after)
    now = {row.id: row for row in after}
    known = {row.id for row in before}
    report.new_cases = sum(1 for row in after if row.id not in known)
    for old in before:
        new = now.get(old.id)
        if new is None:
            report.worse.append((old.id, f"missing from {after_path}"))
            continue
        found = list(_worse(old, new, relative, tolerances))
        report.worse.extend((old.id, f"{text}{settings_of(old)}") for text in found)
        if not found and any(_improved(old, new, name) for name in ORDERED):
            report.better += 1
        if old.figures.get("frame_hash") != new.figures.get("frame_hash"):
            report.hashes_changed += 1
    return report


def _worse(old: Row, new: Row, relative: float, tolerances: dict[str, float]) -> Iterator[str]:
    if old.status == OK and new.status != OK:
        yield f"failed: {new.error}"
        return
    for name in ORDERED:
        a, b = old.number(name), new.number(name)
        if math.isnan(a):
            continue
        if math.isnan(b):
            yield f"{name} {a:g} -> none"
            continue
        allowance = max(tolerances.get(name, 0.0), relative * abs(a))
        if b - a > allowance:
            yield f"{name} {a:g} -> {b:g} ({_change(a, b)})"


def _improved(old: Row, new: Row, name: str) -> bool:
    a, b = old.number(name), new.number(name)
    return (math.isnan(a) and not math.isnan(b)) or b < a


def _change(a: float, b: float) -> str:
    return f"{(b - a) / abs(a) * 100:+.1f} %" if a else f"{b - a:+g}"


def settings_of(row: Row) -> str:
    """The settings a row's case gives, as a report names its case: `` [section.key=value, ...]``."""
    given = [f"{k}={v}" for k, v in row.settings.items() if v]
    return f" [{', '.join(given)}]" if given else ""


def plot(report: Report, path: str) -> None:
    """One PNG: for each figure that can get worse, its distribution before and after."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise ConfigError(needs_extra("--png", "matplotlib", "campaign")) from None
    columns = 4
    rows = math.ceil(len(ORDERED) / columns)
    figure, axes = pyplot.subplots(rows, columns, figsize=(4 * columns, 3 * rows), squeeze=False)
    for axis, name in zip(axes.flat, ORDERED, strict=False):
        series = [[v for v in (r.number(name) for r in table) if not math.isnan(v)]
                  for table in (report.before, report.after)]
        axis.boxplot(series, showfliers=True)
        axis.set_xticks([1, 2], ["before", "after"])
        axis.set_title(name, fontsize=9)
    for axis in list(axes.flat)[len(ORDERED):]:
        axis.set_visible(False)
    cases = len({case for case, _ in report.worse})
    figure.suptitle(f"campaign compare: {cases} of {len(report.before)} cases worse")
    save_png(figure, path)


def save_png(figure: Figure, path: str) -> None:
    """Write a compare figure and close it; a ConfigError, not a traceback, when it cannot be written."""
    from matplotlib import pyplot

    figure.tight_layout()
    try:
        figure.savefig(path, dpi=100)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        pyplot.close(figure)
