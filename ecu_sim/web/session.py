"""The recording a page starts and stops, and its download.

A replay needs the node's whole history (its truck, its controller's integral, the fault
generator), so a web session records from tick 0: into the page's spool (ecu_sim.io.spool),
which notes the frames and ticks and makes the recording only for a download, or through the
ordinary recorder when the run records to a file of the person's (``--record``). ``record start``
and ``record stop`` mark the span a person asked for; at the stop the loop cuts the recording
there (the spool's size, or the recorder's files flushed), and the download is the log and the
journal as they were then, in one zip: a recording from tick 0 to the stop that ``ecu-sim
replay`` checks bit for bit (it says it ends at its last flushed tick). Both only grow, so that
prefix can be read later from the server's thread while the loop writes on.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ecu_sim.io.journal import journal_path
from ecu_sim.io.recorder import Recorder
from ecu_sim.io.spool import prefix


class Cut(Protocol):
    """A recording up to a stop."""

    def files(self) -> tuple[bytes, bytes]:
        """The log's and the journal's bytes up to the stop; read in the server's thread."""


@dataclass(frozen=True)
class Flushed:
    """A recorder's files flushed at a stop, and their sizes then: their prefixes are the cut."""

    path: str
    log_bytes: int
    journal_bytes: int

    def files(self) -> tuple[bytes, bytes]:
        return prefix(self.path, self.log_bytes), prefix(journal_path(self.path), self.journal_bytes)


def flushed(recorder: Recorder) -> Callable[[], Cut]:
    """A recorder's cut: its files flushed now."""
    def cut() -> Cut:
        return Flushed(recorder.path, *recorder.flush_now())

    return cut


@dataclass(frozen=True)
class Span:
    """A stopped recording: the ticks the person asked for and the recording cut at the stop."""

    start_tick: int
    stop_tick: int
    cut: Cut


class Session:
    """The marks of one run's recording; :meth:`mark` runs in the loop's thread. ``path``: the
    recording's name (the download's); ``cut``: the recording up to now."""

    def __init__(self, path: str, cut: Callable[[], Cut]) -> None:
        self._cut = cut
        self.path = path
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
        self.span = Span(self.started, tick, self._cut())
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
        log, journal = span.cut.files()
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(name, log)
            archive.writestr(name + ".ticks", journal)
        stem = os.path.splitext(name)[0]
        return f"{stem}-ticks-{span.start_tick}-{span.stop_tick}.zip", buffer.getvalue()
