"""``--record FILE``: every frame a node receives and sends, plus what a replay needs to repeat it.

The frames go to ``FILE`` through python-can's ``Logger``, so the format follows the suffix
(``.log`` candump, ``.asc``, ``.blf``) and any CAN tool can read it; with ``max_bytes`` python-can's
``SizedRotatingLogger`` starts a new file at that size, renaming the full one
(``run_<date>_#000.log``, ...), so ``FILE`` always holds the newest frames. Received frames keep
the bus's timestamp; sent frames get the wall-clock time of sending, on the same clock.

Next to it, ``FILE.ticks`` (the tick journal) holds what the frames alone cannot tell:

- line 1, JSON: the node, every setting of the run, the route, the DBC's checksum and the
  resolved fault schedule with its seed;
- one line per tick: ``RX TX [FLAGS]``, the number of frames received since the previous tick
  (all of them, in the log's order: they fell before this tick) and sent by this tick; flag
  ``s`` for a tick the loop ran without sending (it was overdue), ``f`` for a frame the node
  handed to the port that never reached the bus (bus down, send error);
- ``part NAME`` for each file the rotation closed, in order;
- last, written when the run stops: ``end RX``, the frames received after the last tick (an echo
  of its frame, say), which the log holds but no tick used. A journal without it is that of a
  run killed before it could stop.

The log's direction is the node's: its own frames are marked sent (``T`` in a candump .log),
everything it received is marked received, also an echo the bus marks as sent (SocketCAN does).
A replay checks each frame's direction against the journal's split, so a frame missing from
the log, or one moved or remarked, is found at its tick.

Because a node holds its input for a number of ticks, not seconds (see :mod:`ecu_sim.nodes.input`),
that is all the timing a replay needs. Both files are flushed when the run ends, including on
SIGINT/SIGTERM.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import can

from ecu_sim.codec.profile import Profile
from ecu_sim.errors import ConfigError
from ecu_sim.faults.injector import Fault
from ecu_sim.nodes.input import InputNode
from ecu_sim.settings.load import Settings

log = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".ticks"
JOURNAL_FORMAT = "ecu-sim tick journal"
#: 2: received frames always marked received, and the ``end RX`` line
JOURNAL_VERSION = 2
#: settings sections a replay needs; [bus] is not needed, [record] and [faults] are resolved
REPLAYED_SECTIONS = ("profile", "truck", "controller", "run")


def journal_path(record_path: str) -> str:
    return record_path + JOURNAL_SUFFIX


def dbc_checksum(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def header(kind: str, settings: Settings, profile: Profile, route: Sequence[tuple[float, float]] | None,
           faults: Sequence[Fault], seed: int, log_name: str) -> dict[str, Any]:
    """Line 1 of the journal: everything that decides what the node sends."""
    return {
        "format": JOURNAL_FORMAT,
        "version": JOURNAL_VERSION,
        "node": kind,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "log": os.path.basename(log_name),
        "settings": {name: dataclasses.asdict(getattr(settings, name)) for name in REPLAYED_SECTIONS},
        "route": None if route is None else [list(point) for point in route],
        "dbc": {"path": profile.dbc_path, "sha256": dbc_checksum(settings.profile.dbc)},
        "faults": {"seed": seed, "faults": [dataclasses.asdict(f) for f in faults]},
    }


class Recorder(can.Listener):
    """A tap on the node's port and a hook after each of its ticks; see the module docstring."""

    def __init__(self, path: str, max_bytes: int, node: InputNode, head: dict[str, Any]) -> None:
        self.path = path
        self._node = node
        try:
            self._journal = open(journal_path(path), "w", encoding="ascii", buffering=1 << 16)  # noqa: SIM115  # open for the whole run, closed by stop()
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
            self._journal.close()
            raise ConfigError(f"cannot write the recording {path}: {exc}") from None
        self._journal.write(json.dumps(head, separators=(",", ":")) + "\n")
        self._rx = 0
        self._tx = 0
        self._handed = node.handed
        self._stopped = False
        #: frames written so far, received and sent
        self.frames = 0

    def on_message_received(self, msg: can.Message) -> None:
        if self._node.sending:
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

    def after_tick(self, tick: int, transmitted: bool) -> None:
        handed = self._node.handed
        flags = "" if transmitted else "s"
        if handed - self._handed != self._tx:
            flags += "f"
        self._handed = handed
        self._journal.write(f"{self._rx} {self._tx} {flags}\n" if flags else f"{self._rx} {self._tx}\n")
        self._rx = self._tx = 0

    def _rotated(self, default_name: str | os.PathLike[str]) -> str:
        name = os.fspath(default_name)
        self._journal.write(f"part {os.path.basename(name)}\n")
        return name

    def stop(self) -> None:
        """Flush and close both files; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._logger.stop()
            self._journal.write(f"end {self._rx}\n")  # only for a log closed complete
        finally:
            self._journal.close()
        log.info("recorded %d frames to %s (tick journal %s)", self.frames, self.path,
                 journal_path(self.path))
