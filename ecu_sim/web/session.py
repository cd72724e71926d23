"""The recording a page starts and stops, and its download.

A replay needs the node's whole history (its truck, its controller's integral, the fault
generator), so a web session records from tick 0, through the ordinary recorder and its tick
journal. ``record start`` and ``record stop`` mark the span a person asked for; at the stop the
loop flushes both files, and the download is the log and the journal as they were then, in one
zip: a recording from tick 0 to the stop that ``ecu-sim replay`` checks bit for bit (it says it
ends at its last flushed tick). The files only grow (no rotation, a text format), so that prefix
can be read later from the server's thread while the loop writes on.
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass

from ecu_sim.io.journal import journal_path
from ecu_sim.io.recorder import Recorder


@dataclass(frozen=True)
class Span:
    """A stopped recording: the ticks the person asked for and the files' sizes at the stop."""

    start_tick: int
    stop_tick: int
    log_bytes: int
    journal_bytes: int


class Session:
    """The marks of one run's recording; :meth:`mark` runs in the loop's thread."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self.path = recorder.path
        #: the tick of the latest start while recording, else None
        self.started: int | None = None
        #: the latest stopped span; replaced, never changed
        self.span: Span | None = None

    def mark(self, action: str, tick: int) -> str | None:
        """``start`` or ``stop`` before ``tick``; None when done, else why nothing changed."""
        if action == "start":
            if self.started is not None:
                return f"a recording is already on since tick {self.started}"
            self.started = tick
            return None
        if self.started is None:
            return "no recording is on: start one first"
        log_bytes, journal_bytes = self._recorder.flush_now()
        self.span = Span(self.started, tick, log_bytes, journal_bytes)
        self.started = None
        return None

    def state(self) -> dict[str, object]:
        span = self.span
        return {"recording": self.started is not None, "since_tick": self.started,
                "download": None if span is None else {"start_tick": span.start_tick,
                                                        "stop_tick": span.stop_tick}}

    def download(self) -> tuple[str, bytes] | None:
        """The zip's file name and bytes: the log and its journal up to the latest stop."""
        span = self.span
        if span is None:
            return None
        name = os.path.basename(self.path)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(name, _prefix(self.path, span.log_bytes))
            archive.writestr(name + ".ticks", _prefix(journal_path(self.path), span.journal_bytes))
        stem = os.path.splitext(name)[0]
        return f"{stem}-ticks-{span.start_tick}-{span.stop_tick}.zip", buffer.getvalue()


def _prefix(path: str, size: int) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(size)
