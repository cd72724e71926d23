"""What ``ecu-sim plot`` draws, read from any output of a run, as one set of time series.

Three kinds of input, told apart by the suffix:

- a ``simulate --out`` CSV: its columns, one row per tick;
- an MCAP recording: its ``/ticks`` topic, which holds the model state and the loop's lateness of
  every tick as the run had them;
- a .log, .asc or .blf recording with its tick journal: replayed
  (:func:`ecu_sim.runs.replay.replay`), which rebuilds the node bit for bit, so the plot shows
  the model's own state (grade and distance too, which no frame carries), not a decoding of it.

Faults come from the recorded schedule; late ticks from the MCAP's lateness, or, in a journal,
the overdue ticks the loop ran without sending (a journal keeps no other timing).
"""

from __future__ import annotations

import bisect
import csv
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import Fault
from ecu_sim.io import mcap_format
from ecu_sim.io.recording import load
from ecu_sim.io.signals import node_state
from ecu_sim.nodes.figures import Figured
from ecu_sim.runs import replay

log = logging.getLogger(__name__)

#: the series a plot may show, by the name a CSV column or a node's state gives it
NAMES = ("speed_kph", "set_speed_kph", "app_pct", "brake_pct", "grade_pct", "distance_m", "gear",
         "engine_speed_rpm", "torque_mode", "controlling_address", "accel_mps2")
RECORDING_SUFFIXES = (".log", ".asc", ".blf")


@dataclass
class Series:
    """One value per tick of each series the input has; a series the input lacks is absent."""

    source: str
    t_s: list[float] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=dict)
    #: (start, end or None for the end of the run, text) of each scheduled fault
    faults: list[tuple[float, float | None, str]] = field(default_factory=list)
    late_t_s: list[float] = field(default_factory=list)
    #: the wall-clock time of each tick, where the input has it (an MCAP recording of a real run)
    wall_s: list[float] = field(default_factory=list)

    def add(self, t_s: float, row: Mapping[str, float]) -> None:
        """One tick; a series missing from this tick but present in others gets NaN (a gap)."""
        index = len(self.t_s)
        self.t_s.append(t_s)
        for name in NAMES:
            if name in row:
                self.values.setdefault(name, [math.nan] * index).append(float(row[name]))
            elif name in self.values:
                self.values[name].append(math.nan)


def merge(main: Series, other: Series) -> Series:
    """``main`` with the series only ``other`` has (the CCM's set speed beside the ECU's output).

    Each of ``main``'s ticks takes ``other``'s newest value at or before it: by the wall clock
    when both have it (two processes of one run), else by the time since each one's first tick.
    Outside ``other``'s ticks there is nothing to take: a gap.
    """
    by_wall = bool(main.wall_s and other.wall_s)
    mine, theirs = (main.wall_s, other.wall_s) if by_wall else (main.t_s, other.t_s)
    last = theirs[-1] if theirs else -math.inf
    picks = [bisect.bisect_right(theirs, t) - 1 if t <= last else -1 for t in mine]
    for name, values in other.values.items():
        if name not in main.values:
            main.values[name] = [values[i] if i >= 0 else math.nan for i in picks]
    shift = (other.wall_s[0] - other.t_s[0]) - (main.wall_s[0] - main.t_s[0]) if by_wall else 0.0
    main.faults += [(start + shift, None if end is None else end + shift, text)
                    for start, end, text in other.faults]
    main.late_t_s = sorted(main.late_t_s + [t + shift for t in other.late_t_s])
    main.source += f" + {other.source}"
    return main


def load_series(path: str, dbc: str | None = None) -> Series:
    """The series of ``path``; a ConfigError says why a file cannot be plotted."""
    lower = path.lower()
    if lower.endswith(".csv"):
        return from_csv(path)
    if lower.endswith(mcap_format.SUFFIX):
        return from_mcap(path)
    if lower.endswith(RECORDING_SUFFIXES):
        return from_recording(path, dbc)
    raise ConfigError(f"{path}: cannot plot this file; give a simulate --out .csv, a recording "
                      "(.log, .asc, .blf with its .ticks) or an .mcap recording")


def from_csv(path: str) -> Series:
    series = Series(f"{path} (simulate)")
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            columns = reader.fieldnames or []
            if "t_s" not in columns or "speed_kph" not in columns:
                raise ConfigError(f"{path}: not a simulate --out CSV: line 1 must name the columns "
                                  f"t_s and speed_kph (got {','.join(columns) or 'nothing'})")
            for number, row in enumerate(reader, start=2):
                try:
                    values = {name: float(row[name]) for name in NAMES if row.get(name) not in (None, "")}
                    series.add(float(row["t_s"]), values)
                except (TypeError, ValueError):
                    raise ConfigError(f"{path}, line {number}: expected numbers, got "
                                      f"{','.join(str(v) for v in row.values())!r}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a simulate --out CSV (not text)") from None
    if not series.t_s:
        raise ConfigError(f"{path}: the CSV has no rows to plot")
    return series


def _faults(head: Mapping[str, Any]) -> list[tuple[float, float | None, str]]:
    recorded = head.get("faults", {}).get("faults", [])
    return [(fault.start_s, fault.end_s, str(fault)) for fault in (Fault(**f) for f in recorded)]


def from_mcap(path: str) -> Series:
    inside = mcap_format.read_journal(path)
    series = Series(f"{path} ({inside.head['node'].upper()}, MCAP)")
    series.faults = _faults(inside.head)
    for tick in mcap_format.messages(path, mcap_format.TICKS):
        loop = tick["loop"]
        state: dict[str, float] = {}
        for node in ("ccm", "ecu"):  # the ECU's own speed wins over the speed the CCM received
            state.update(tick.get(node, {}).get("state", {}))
        series.add(float(loop["t_s"]), state)
        series.wall_s.append(float(tick["timestamp"]))
        if loop["late"]:
            series.late_t_s.append(float(loop["t_s"]))
    if not series.t_s:
        raise ConfigError(f"{path}: the MCAP recording holds no ticks to plot")
    return series


class _Watch:
    """A tick observer of the replayed node: its state after each tick."""

    def __init__(self, node: Figured, series: Series, period_s: float) -> None:
        self._node = node
        self._series = series
        self._period_s = period_s

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        self._series.add(round(tick * self._period_s, 9), node_state(self._node))


def from_recording(path: str, dbc: str | None) -> Series:
    recording = load(path)
    series = Series(f"{path} ({recording.kind.upper()}, replayed)")
    period = float(recording.head["settings"]["run"]["period_s"])
    result = replay.replay(path, dbc, watch=lambda node: _Watch(node, series, period))
    if not result.identical:
        log.warning("%s does not replay bit for bit (see ecu-sim replay %s): the plot shows the "
                    "replayed node", path, path)
    series.faults = _faults(recording.head)
    series.late_t_s = [round(k * period, 9) for k, t in enumerate(recording.ticks) if t.skipped]
    return series
