"""One campaign's cases side by side by one setting: e.g. the PI and the predictive controller on the
same route, at the same speed, with the same payload.

``campaign compare RESULTS.csv --by controller.mode`` groups the rows of one table by every other
setting a case gives, and for each group puts the figures of each value of the ``--by`` setting
side by side, with the change against the first value (the order of the campaign file). Unlike the
before/after comparison it judges nothing: what is better depends on what the study trades
(fuel against travel time), so it reports and leaves the judgement to the reader.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from ecu_sim.campaign.compare import save_png
from ecu_sim.campaign.results import read_table
from ecu_sim.campaign.row import HEAD, OK, TAIL, Row
from ecu_sim.errors import ConfigError, needs_extra

#: the figures shown, with their column headings
SHOWN = {"fuel_l_per_100km": "fuel l/100km", "travel_time_s": "time s", "speed_dev_rms_kph": "dev km/h"}


@dataclass(frozen=True)
class Group:
    """The cases that differ only in the ``--by`` setting: their other settings, and each value's row."""

    settings: tuple[tuple[str, str], ...]
    rows: dict[str, Row]

    def number(self, value: str, figure: str) -> float:
        """The figure of the case whose ``--by`` setting is ``value``; NaN where it has none."""
        row = self.rows.get(value)
        return math.nan if row is None else row.number(figure)


@dataclass(frozen=True)
class SideBySide:
    key: str
    #: the values of ``key`` in the order the table first gives them; the first is the reference
    values: tuple[str, ...]
    groups: tuple[Group, ...]

    def change(self, group: Group, value: str, figure: str) -> float:
        """``value``'s figure against the reference's, in percent; NaN where one is missing."""
        ref, other = (group.number(v, figure) for v in (self.values[0], value))
        return (other - ref) / abs(ref) * 100.0 if ref else math.nan

    def lines(self) -> Iterator[str]:
        others = self.values[1:]
        yield f"{self.key}: {' vs '.join(self.values)} (change against {self.values[0]})"
        for group in self.groups:
            yield " ".join(f"{k}={v}" for k, v in group.settings) or "(every other setting alike)"
            for figure, heading in SHOWN.items():
                cells = [_cell(group.number(v, figure)) for v in self.values]
                changes = [f"{self.change(group, v, figure):+.2f} %" for v in others]
                yield f"  {heading:13} " + "  ".join(f"{c:>10}" for c in cells) + "   " + "  ".join(changes)


def side_by_side(path: str, key: str) -> SideBySide:
    """The table at ``path`` grouped by every setting but ``key``; ConfigError when ``key`` is no
    column of it or takes one value only."""
    table = read_table(path)
    columns = [*HEAD, *table[0].settings, *table[0].figures, *TAIL] if table else []
    # the settings every case shares say nothing about a group
    varied = [c for c in table[0].settings if len({row.value(c) for row in table}) > 1] if table else []
    if key not in varied:
        given = f"every case of {path} has the same {key}" if key in columns else f"{path} has no {key}"
        raise ConfigError(f"--by {key}: {given}, so there is nothing to put side by side; its cases "
                          f"vary {', '.join(varied) or 'no setting'}")
    values = tuple(dict.fromkeys(row.value(key) for row in table))
    others = [c for c in varied if c != key]
    groups: dict[tuple[tuple[str, str], ...], dict[str, Row]] = {}
    for row in table:
        if row.status != OK:
            continue
        groups.setdefault(tuple((c, row.value(c)) for c in others), {})[row.value(key)] = row
    return SideBySide(key, values, tuple(Group(k, v) for k, v in groups.items()))


def plot(result: SideBySide, path: str) -> None:
    """One PNG: per figure, each group's change against the reference value (deviation: as it is)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise ConfigError(needs_extra("--png", "matplotlib", "campaign")) from None
    labels = ["\n".join(f"{k.split('.')[-1]}={v}" for k, v in g.settings) for g in result.groups]
    figure, axes = pyplot.subplots(len(SHOWN), 1, figsize=(max(6.0, 1.1 * len(labels)), 3.2 * len(SHOWN)),
                                   squeeze=False)
    width = 0.8 / len(result.values)
    for axis, (name, heading) in zip(axes[:, 0], SHOWN.items(), strict=True):
        relative = name != "speed_dev_rms_kph"
        shown = result.values[1:] if relative else result.values
        for i, value in enumerate(shown):
            heights = [result.change(g, value, name) if relative
                       else g.number(value, name) for g in result.groups]
            axis.bar([x + i * width for x in range(len(labels))], heights, width, label=value)
        axis.set_ylabel(f"{heading} change %" if relative else heading, fontsize=8)
        axis.set_xticks([x + (len(shown) - 1) * width / 2 for x in range(len(labels))], labels, fontsize=6)
        axis.axhline(0.0, color="black", linewidth=0.5)
        axis.legend(fontsize=7, title=result.key, title_fontsize=7)
    figure.suptitle(f"{result.key}: {' vs '.join(result.values)}")
    save_png(figure, path)


def _cell(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.4g}"
