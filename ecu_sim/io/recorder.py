"""``--record FILE``: every frame a node receives and sends, plus what a replay needs to repeat it.

The frames go to ``FILE`` through python-can's ``Logger``, so the format follows the suffix
(``.log`` candump, ``.asc``, ``.blf``) and any CAN tool can read it; with ``max_bytes`` python-can's
``SizedRotatingLogger`` starts a new file at that size, renaming the full one
(``run_<date>_#000.log``, ...), so ``FILE`` always holds the newest frames. Received frames keep
the bus's timestamp; sent frames get the wall-clock time of sending, on the same clock. Next to
it the tick journal (:mod:`ecu_sim.io.journal`) splits the frames into ticks.

The recorder is a listener of the node's port, which tells it each frame's direction: the log's
direction is the node's. Its own frames are marked sent (``T`` in a candump .log); everything it
received is marked received, also an echo the bus marks as sent (SocketCAN does). A replay
checks each frame's direction against the journal's split, so a frame missing from the log, or
one moved or remarked, is found at its tick. Both files are flushed when the run ends, including
on SIGINT/SIGTERM.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.codec.profile import Profile
from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import FaultSchedule
from ecu_sim.io.journal import JournalWriter, dbc_checksum, journal_path
from ecu_sim.settings.model import Settings

log = logging.getLogger(__name__)

#: settings sections a replay needs; [bus] is not needed, [record] and [faults] are resolved
REPLAYED_SECTIONS = ("profile", "truck", "controller", "run", "j1939")


def header(kind: str, settings: Settings, profile: Profile, route: Sequence[tuple[float, float]] | None,
           schedule: FaultSchedule, log_name: str) -> dict[str, Any]:
    """Line 1 of the journal: everything that decides what the node sends."""
    return {
        "node": kind,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "log": os.path.basename(log_name),
        "settings": {name: dataclasses.asdict(getattr(settings, name)) for name in REPLAYED_SECTIONS},
        "route": None if route is None else [list(point) for point in route],
        "dbc": {"path": profile.dbc_path, "sha256": dbc_checksum(settings.profile.dbc)},
        "faults": {"seed": schedule.seed, "faults": [dataclasses.asdict(f) for f in schedule.faults]},
    }


class Recorder:
    """A listener on the node's port and an observer of its loop; a context manager."""

    def __init__(self, path: str, max_bytes: int, head: dict[str, Any]) -> None:
        self.path = path
        try:
            self._journal = JournalWriter(journal_path(path), head)
        except OSError as exc:
            raise ConfigError(f"cannot write the recording {journal_path(path)}: "
                              f"{exc.strerror or exc}") from None
        try:
            if max_bytes > 0:
                rotating = can.SizedRotatingLogger(path, max_bytes=max_bytes)
                rotating.namer = self._rotated
                self._logger: can.Listener = rotating
            else:
                self._logger = can.Logger(path)
        except (OSError, ValueError) as exc:
            self._journal.close(None)
            raise ConfigError(f"cannot write the recording {path}: {exc}") from None
        self._rx = 0
        self._tx = 0
        self._failed = False
        self._stopped = False
        #: frames written so far, received and sent
        self.frames = 0

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.NOT_SENT:
            self._failed = True
            return
        if direction is Direction.SENT:
            self._tx += 1
            msg = can.Message(timestamp=time.time(), arbitration_id=msg.arbitration_id,
                              is_extended_id=msg.is_extended_id, is_fd=msg.is_fd,
                              bitrate_switch=msg.bitrate_switch, data=msg.data, channel=msg.channel,
                              is_rx=False, check=False)
        else:
            self._rx += 1
            if not msg.is_rx:  # an echo the bus marks as sent: the node received it
                msg = copy.copy(msg)
                msg.is_rx = True
        self.frames += 1
        self._logger.on_message_received(msg)

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        self._journal.tick(self._rx, self._tx, not transmitted, self._failed)
        self._rx = self._tx = 0
        self._failed = False

    def _rotated(self, default_name: str | os.PathLike[str]) -> str:
        name = os.fspath(default_name)
        self._journal.part(name)
        return name

    def stop(self) -> None:
        """Flush and close both files; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._logger.stop()
        except BaseException:
            self._journal.close(None)
            raise
        self._journal.close(self._rx)  # the end line only for a log closed complete
        log.info("recorded %d frames to %s (tick journal %s)", self.frames, self.path,
                 journal_path(self.path))
