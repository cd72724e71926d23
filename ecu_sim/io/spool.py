"""The page's own recording: frames and ticks noted as they pass, made a recording only when asked.

``--web`` records the run from tick 0 so that a person can download any span of it and replay it
bit for bit; most runs never download anything. Writing the candump log and the tick journal as
the run goes (:class:`~ecu_sim.io.recorder.Recorder`: the wire order, each frame formatted, a
journal line a tick) was most of what ``--web`` cost a node nobody looked at. So the spool only
notes each frame's fields, with what cannot wait (the time a sent frame was handed over), and
each tick and control, and every :data:`SPOOL_INTERVAL_S` hands the notes to a file in one
``marshal`` record, all in C. A download asks for the spool's size at the stop (:meth:`Spool.cut`,
in the loop's thread) and a separate process (``python -m ecu_sim.io.spool``) works that prefix
through an ordinary recorder, flushing where the live one would have, so its log and journal are
the bytes the node would have written itself; the node's loop goes on meanwhile, ahead of that
process in the scheduler's order.

A spool is a format of this version of ecu-sim only, written and read by it during one run, in
a temporary folder: never a file a person keeps, so it carries no version of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import marshal
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from types import TracebackType
from typing import IO, Any

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.errors import CannotCreateError, OutputError
from ecu_sim.io.journal import journal_path
from ecu_sim.io.recorder import Recorder
from ecu_sim.runtime.ticks import ticks_in

#: how often the notes go to the spool's file: what the node holds in memory
SPOOL_INTERVAL_S = 10.0
#: the fields of a frame a recording writes, in can.Message's own names, read in one C call
FIELDS = ("timestamp", "arbitration_id", "is_extended_id", "is_remote_frame", "is_error_frame", "channel",
          "dlc", "data", "is_fd", "is_rx", "bitrate_switch", "error_state_indicator")
_fields = attrgetter(*FIELDS)
#: a control's note's first item: an int, where a frame's is its direction's value, a string, and
#: a tick's note is its flag alone, a bool
CONTROL = 1
#: binary floats, and no table of the objects written (version 3's), which costs more than it saves
MARSHAL_VERSION = 2
#: a record marshal cannot write (a channel or a value of a type it does not know) is pickled,
#: which keeps every type as it was, inside a marshalled (PICKLED, bytes)
PICKLED = "pickled"
_SENT = Direction.SENT

Note = tuple[Any, ...] | bool


@dataclass(frozen=True)
class SpoolCut:
    """A spool up to a stop: where it is, its size then, the suffix of the recording's log, and
    the processes making recordings of it, which the spool stops when the run ends."""

    path: str
    size: int
    suffix: str
    making: set[subprocess.Popen[str]] = field(compare=False)

    def files(self) -> tuple[bytes, bytes]:
        """The log and the journal of the run up to the cut, as a recorder flushed at the stop
        would hold them; made by a separate process, which this waits for."""
        try:
            # a folder of its own: two downloads at once each make their own
            with tempfile.TemporaryDirectory(dir=os.path.dirname(self.path)) as folder:
                out = os.path.join(folder, "cut" + self.suffix)
                sizes = self._made(out)
                return prefix(out, sizes[0]), prefix(journal_path(out), sizes[1])
        except OSError as exc:
            raise OutputError(f"making the recording up to the stop failed: {exc.strerror or exc} "
                              "(the run may be stopping)") from None

    def _made(self, out: str) -> tuple[int, int]:
        process = subprocess.Popen([sys.executable, "-m", "ecu_sim.io.spool", self.path, str(self.size), out],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.making.add(process)
        try:
            printed, problem = process.communicate()
        finally:
            self.making.discard(process)
        if process.returncode == os.EX_SOFTWARE:
            raise RuntimeError(f"making the recording up to the stop hit a bug in ecu-sim: {problem.strip()}")
        if process.returncode != 0:
            raise OutputError(f"making the recording up to the stop failed: "
                              f"{problem.strip() or f'stopped with status {process.returncode}'}")
        log_bytes, journal_bytes = json.loads(printed)
        return int(log_bytes), int(journal_bytes)


class Spool:
    """A listener on the node's port and an observer of its loop, as a recorder is; a context
    manager. ``path`` names the recording it stands for (its suffix is the log's format)."""

    def __init__(self, path: str, head: dict[str, Any], *, period_s: float = 0.1,
                 channel: str | None = None, now: Callable[[], float] = time.time) -> None:
        self.path = path
        self._now = now
        self._every = max(1, ticks_in(SPOOL_INTERVAL_S, period_s))
        self._notes: list[Note] = []
        self._note = self._notes.append
        self._ticks = 0
        self._making: set[subprocess.Popen[str]] = set()
        self._file_path = path + ".spool"
        try:
            self._file: IO[bytes] = open(self._file_path, "wb")  # noqa: SIM115  # closed by __exit__
        except OSError as exc:
            raise CannotCreateError(f"cannot write the page's recording {self._file_path}: "
                                    f"{exc.strerror or exc}") from None
        try:
            self._dump({"path": path, "head": head, "period_s": period_s, "channel": channel})
        except (OutputError, TypeError):
            self._file.close()
            raise

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        """Close the file, and stop the downloads still being made: their folder goes next."""
        for process in list(self._making):
            process.terminate()
            process.wait()
        with contextlib.suppress(OSError):
            self._file.close()

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        # the enum's plain attribute and a global, not its ``value`` property and class lookup:
        # what a frame costs here is all the spool costs
        self._note((direction._value_, _fields(msg), self._now() if direction is _SENT else None))

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        self._note(transmitted)  # a tick's note is its flag alone: the commonest note, the cheapest
        self._ticks += 1
        if self._ticks % self._every == 0:
            self._hand_over()

    def control(self, record: dict[str, Any]) -> None:
        """A control applied after the latest tick, as the journal holds it."""
        self._note((CONTROL, record))

    def cut(self) -> SpoolCut:
        """The run so far, to be made a recording later; in the loop's thread, at a stop."""
        self._hand_over()
        return SpoolCut(self._file_path, self._file.tell(), os.path.splitext(self.path)[1], self._making)

    def _hand_over(self) -> None:
        """The notes so far to the file, in one record; the list kept, so ``_note`` stays bound."""
        self._dump(self._notes)
        self._notes.clear()

    def _dump(self, value: Any) -> None:
        """One record to the file; OutputError when the file cannot take it, TypeError (a bug: a
        note holds what no recording can) when neither marshal nor pickle can write it."""
        try:
            record = marshal.dumps(value, MARSHAL_VERSION)
        except ValueError:
            try:
                record = marshal.dumps((PICKLED, pickle.dumps(value)), MARSHAL_VERSION)
            except (pickle.PicklingError, TypeError, AttributeError) as exc:
                raise TypeError(f"a note of the page's recording holds a value no recording can: "
                                f"{exc}") from exc
        try:
            self._file.write(record)
            self._file.flush()
        except OSError as exc:
            raise OutputError(f"writing the page's recording {self._file_path} failed: {exc}") from None


def _records(path: str, size: int) -> Iterator[Any]:
    """The spool's records in its first ``size`` bytes, those marshal could not write unpickled."""
    with open(path, "rb") as handle:
        while handle.tell() < size:
            record = marshal.load(handle)
            yield pickle.loads(record[1]) if isinstance(record, tuple) and record[0] == PICKLED else record


def render(spool_path: str, size: int, log_path: str) -> tuple[int, int]:
    """Work the spool's first ``size`` bytes through a recorder writing ``log_path``; the sizes of
    its log and journal at the cut (what follows them is the end a stopped recorder adds)."""
    records = _records(spool_path, size)
    first = next(records)
    with Recorder(log_path, 0, first["head"], period_s=first["period_s"], channel=first["channel"],
                  temporary=True) as recorder:
        for notes in records:
            for note in notes:
                _replay(recorder, note)
        return recorder.flush_now()


def _replay(recorder: Recorder, note: Note) -> None:
    """One note to the recorder, as it would have come to it while the node ran."""
    if isinstance(note, bool):
        recorder.on_tick(0, 0.0, note)
    elif note[0] == CONTROL:
        recorder.control(note[1])
    else:
        fields = dict(zip(FIELDS, note[1], strict=True))
        recorder.noted(Direction(note[0]), can.Message(**fields, check=False), note[2])


def prefix(path: str, size: int) -> bytes:
    """A file's first ``size`` bytes: a recording cut where it was flushed."""
    with open(path, "rb") as handle:
        return handle.read(size)


def main(argv: list[str] | None = None) -> int:
    """``python -m ecu_sim.io.spool SPOOL BYTES LOG``: a cut made a recording; prints its sizes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spool")
    parser.add_argument("size", type=int)
    parser.add_argument("log")
    args = parser.parse_args(argv)
    with contextlib.suppress(OSError):
        os.nice(10)  # the node this serves runs on: it comes first
    try:
        sizes = render(args.spool, args.size, args.log)
    except (OSError, EOFError, ValueError, StopIteration, pickle.UnpicklingError) as exc:
        print(f"the spool {args.spool} cannot be read up to byte {args.size}: {exc!r}", file=sys.stderr)
        return 1
    except (TypeError, KeyError) as exc:  # records read whole but not the ones the spool writes
        print(f"a record of the spool {args.spool} is not one ecu-sim writes ({exc!r}): a bug in ecu-sim, "
              "not a damaged file", file=sys.stderr)
        return os.EX_SOFTWARE
    print(json.dumps(sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
