"""The tick journal: what a recording's frames alone cannot tell a replay, read and written here.

A recording ``FILE`` (candump .log, .asc or .blf, python-can's writers) has its journal next to
it in ``FILE.ticks``:

- line 1, JSON: the node, every setting of the run, the route (the testbed's grade points; a
  road's file checksum, the file being read again), the DBC's checksum and the resolved
  fault schedule with its seed;
- one line per tick: ``RX TX [FLAGS]``, the number of frames received since the previous tick
  (all of them, in the log's order: they fell before this tick) and sent by this tick, whose
  sent frames are in the log where the bus carried them (:mod:`ecu_sim.io.split`); flag
  ``s`` for a tick the loop ran without sending (it was overdue), ``f`` for a frame the node
  handed to the port that never reached the bus (bus down, send error);
- ``part NAME`` for each file a size-limited recording's rotation closed, in order;
- ``control JSON`` for each control a person applied while the node ran (``--web``: a set speed,
  cruise, a pedal override, a fault switched): it acted at the boundary after the tick line
  before it, so a replay applies it before the next tick (:mod:`ecu_sim.controls`);
- ``labels L ...`` after a tick line, in a recording of an attacked run in virtual time
  (``simulate --attack ... --record``): the label of each frame the tick line counts as received,
  in the log's order, 0 for a benign frame, else the number of the attack that sent it (line 1's
  ``attacks`` names each: kind, text, window). Only a tick that received an attack's frame has
  one; the frames the node sent are its own, benign;
- last, written when the run stops: ``end RX``, the frames received after the last tick (an echo
  of its frame, say), which the log holds but no tick used. A journal without it is that of a
  run killed before it could stop.

Because a node holds its input for a number of ticks, not seconds, that split is all the timing
a replay needs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import can

from ecu_sim.errors import ConfigError
from ecu_sim.settings.model import RECORD_FORMATS

SUFFIX = ".ticks"
FORMAT = "ecu-sim tick journal"
#: 2: received frames always marked received, and the ``end RX`` line; 3: the node's own frame
#: once, as sent, when the bus carried it (its echo is not counted as received);
#: 4: ``control JSON`` lines, the controls applied between two ticks; 5: ``labels`` lines
VERSION = 5
#: versions this module reads
READABLE_VERSIONS = (1, 2, 3, 4, VERSION)

#: the label of a frame the node received (an attacked run's, ecu_sim.attack.node): 0 benign, else
#: the attack's number; a recorder given one writes its tick's labels with the tick
Labeller = Callable[[can.Message], int]


def journal_path(record_path: str) -> str:
    return record_path + SUFFIX


def file_checksum(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


@dataclass(frozen=True)
class TickRecord:
    rx: int
    tx: int
    skipped: bool = False
    failed: bool = False


@dataclass
class Journal:
    head: dict[str, Any]
    ticks: list[TickRecord]
    #: names of the rotated parts, in the order they were closed
    parts: list[str] = field(default_factory=list)
    #: frames received after the last tick (the ``end`` line); None: a run killed before it
    #: could stop, or a journal of version 1, which has no such line
    trailing: int | None = None
    #: tick index -> the controls applied right before that tick, in the order they were applied
    controls: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    #: tick index -> the labels of its received frames (the ``labels`` lines); a tick not here
    #: received benign frames only
    labels: dict[int, list[int]] = field(default_factory=dict)


CONTROL = "control "
LABELS = "labels "


class JournalWriter:
    """Writes one journal; ``close`` ends it with the ``end`` line of a run that stopped in order.

    Tick lines are held in memory until :meth:`flush`, which the recorder calls right after it
    flushed the log: the journal on disk never counts a frame the log on disk lacks, so a killed
    run's recording replays up to its last flush. Line 1 is on disk before the first tick.
    """

    def __init__(self, path: str, head: dict[str, Any]) -> None:
        self.path = path
        self._pending: list[str] = []
        self._file: IO[str] = open(path, "w", encoding="ascii")  # noqa: SIM115  # closed by close()
        try:
            self._file.write(json.dumps({"format": FORMAT, "version": VERSION, **head},
                                        separators=(",", ":")) + "\n")
            self._file.flush()
        except OSError:
            self.discard()
            raise

    def fileno(self) -> int:
        return self._file.fileno()

    def tick(self, rx: int, tx: int, skipped: bool, failed: bool) -> None:
        flags = ("s" if skipped else "") + ("f" if failed else "")
        self._pending.append(f"{rx} {tx} {flags}\n" if flags else f"{rx} {tx}\n")

    def control(self, record: dict[str, Any]) -> None:
        """A control applied after the newest tick line, before the next tick."""
        self._pending.append(CONTROL + json.dumps(record, separators=(",", ":"), sort_keys=True) + "\n")

    def labels(self, labels: Sequence[int]) -> None:
        """The labels of the newest tick line's received frames."""
        self._pending.append(LABELS + " ".join(map(str, labels)) + "\n")

    def unsent(self, count: int) -> None:
        """The newest tick's last ``count`` frames never reached the bus: not sent, flag ``f``."""
        index = max(i for i, line in enumerate(self._pending) if line[0].isdigit())
        fields = self._pending[index].split()
        flags = "".join(sorted(set((fields[2] if len(fields) > 2 else "") + "f")))
        self._pending[index] = f"{fields[0]} {int(fields[1]) - count} {flags}\n"

    def part(self, name: str) -> None:
        """A rotated file, written at once: a killed run's journal must list every part that holds
        frames of its flushed ticks (the order of ``part`` lines among the ticks does not matter)."""
        self._file.write(f"part {os.path.basename(name)}\n")
        self._file.flush()

    def flush(self, keep: int = 0) -> None:
        """Hand the held lines but the last ``keep`` (whose frames the log still lacks) to the
        operating system, which is what survives a killed process; a power cut needs a sync."""
        cut = len(self._pending)
        while keep and cut:  # the last ``keep`` tick lines and the lines after them
            cut -= 1
            keep -= self._pending[cut][0].isdigit()
        lines = self._pending[:cut]
        if lines:
            self._file.write("".join(lines))
            del self._pending[:len(lines)]
        self._file.flush()

    def close(self, trailing: int | None) -> None:
        """Flush and close; ``trailing`` frames after the last tick, None for a log not closed whole,
        whose last held lines are dropped (they may count frames the log lacks)."""
        try:
            if trailing is not None:
                self._pending.append(f"end {trailing}\n")
                self.flush()
        finally:
            self._pending.clear()
            self._close_quietly()

    def discard(self) -> None:
        """Close and delete: a recording that never started leaves no journal behind."""
        self._pending.clear()
        self._close_quietly()
        with contextlib.suppress(OSError):
            os.remove(self.path)

    def _close_quietly(self) -> None:
        # Closing flushes again; after a failed write that fails again, but the file is closed.
        with contextlib.suppress(OSError):
            self._file.close()


def read(path: str, record_path: str) -> Journal:
    """The journal at ``path`` of the recording ``record_path``; ConfigError says what is wrong."""
    try:
        with open(path, encoding="ascii") as handle:
            lines = handle.read().split("\n")
    except OSError as exc:
        if not record_path.lower().endswith(RECORD_FORMATS):
            raise ConfigError(f"{record_path} is not a recording: replay reads the .log, .asc or .blf "
                              f"file written by `ecu-sim --record FILE`, with FILE.ticks next to "
                              f"it") from None
        raise ConfigError(f"cannot read the tick journal {path} of the recording {record_path}: "
                          f"{exc.strerror or exc}; record with `ecu-sim --record {record_path}`") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a tick journal written by ecu-sim --record") from None
    head = _head(path, lines[0])
    journal = Journal(head, [])
    # A run that was killed may end in half a line: the last line counts only when complete.
    for number, line in enumerate(lines[1:-1], start=2):
        _line(journal, path, number, line)
    return journal


def _head(path: str, line: str) -> dict[str, Any]:
    try:
        head = json.loads(line)
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise ConfigError(f"{path}, line 1: not a tick journal written by ecu-sim --record")
    if head.get("node") == "driver":
        raise ConfigError(f"{path}: a driver's recording cannot be replayed: what a driver sends comes "
                          "from a person's controls, not from the bus; replay the ECU's or the CCM's "
                          "recording of the same run instead")
    if head.get("version") not in READABLE_VERSIONS or head.get("node") not in ("ecu", "ccm"):
        raise ConfigError(f"{path}, line 1: journal version {head.get('version')} of node "
                          f"{head.get('node')!r} is not one this ecu-sim replays (version {VERSION})")
    return head


def _line(journal: Journal, path: str, number: int, line: str) -> None:
    where = f"{path}, line {number}"
    if journal.trailing is not None:
        raise ConfigError(f"{where}: {line!r} after the end line 'end {journal.trailing}', which is "
                          "the last line of a tick journal")
    if line.startswith("end "):
        try:
            journal.trailing = int(line[4:])
        except ValueError:
            journal.trailing = -1
        if journal.trailing < 0:
            raise ConfigError(f"{where}: expected 'end RX', got {line!r}")
        return
    if line.startswith("part "):
        journal.parts.append(line[5:])
        return
    if line.startswith(LABELS) and journal.ticks:
        try:
            journal.labels[len(journal.ticks) - 1] = [int(label) for label in line[len(LABELS):].split()]
        except ValueError:
            raise ConfigError(f"{where}: expected 'labels L ...' (whole numbers), got {line!r}") from None
        return
    if line.startswith(CONTROL):
        try:
            record = json.loads(line[len(CONTROL):])
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            raise ConfigError(f"{where}: expected 'control {{JSON object}}', got {line!r}")
        journal.controls.setdefault(len(journal.ticks), []).append(record)
        return
    fields = line.split()
    try:
        rx, tx = int(fields[0]), int(fields[1])
        flags = fields[2] if len(fields) > 2 else ""
    except (IndexError, ValueError):
        raise ConfigError(f"{where}: expected 'RX TX [FLAGS]', got {line!r}") from None
    if len(fields) > 3 or rx < 0 or tx < 0 or set(flags) - {"s", "f"}:
        raise ConfigError(f"{where}: expected 'RX TX [FLAGS]', got {line!r}")
    journal.ticks.append(TickRecord(rx, tx, "s" in flags, "f" in flags))
