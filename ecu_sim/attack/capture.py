"""A labelled capture: every frame the attacker's port saw, in its order, with whose it was.

Two files: ``FILE`` in candump's ``-L`` form (python-can's writer, so can-utils and python-can
read it back), and ``FILE.labels``, whose first line is a JSON header (what ran, the seed, the
version, the attack windows) and then one line per frame of ``FILE``, in the same order: 0 for a
benign frame, else the number of the attack that sent it. Keeping the labels beside a plain log
leaves the log a log any CAN tool replays.

In virtual time a frame's time is its tick's, not the wall clock's, so two runs of the same case
write the same bytes.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import IO, Any

import can

from ecu_sim import __version__
from ecu_sim.attack.plan import BENIGN
from ecu_sim.bus.listener import Direction
from ecu_sim.errors import CannotCreateError

SUFFIX = ".labels"
FORMAT = "ecu-sim labelled capture"
VERSION = 1


class LabelledCapture:
    """A port listener that writes what the port received as benign, plus the attacker's own
    frames, handed in with their labels."""

    def __init__(self, path: str, extras: dict[str, Any], channel: str = "can0") -> None:
        """``extras``: what the caller's mode adds to the header; the keys every capture has
        (format, version, ecu_sim's version) are written here, so no caller can leave one out."""
        try:
            self._log = can.CanutilsLogWriter(path, channel=channel)
            # closed by close(), with the log: the capture is a context manager of its own
            self._labels: IO[str] = open(path + SUFFIX, "w", encoding="ascii", buffering=1 << 16)  # noqa: SIM115
        except OSError as exc:
            raise CannotCreateError(f"cannot create {path}: {exc.strerror or exc}") from None
        header = {"format": FORMAT, "version": VERSION, "ecu_sim_version": __version__, **extras}
        self._labels.write(json.dumps(header) + "\n")
        #: the time given to frames in virtual time; None: keep the bus's own timestamps
        self.now: float | None = None
        self.frames = 0

    def __enter__(self) -> LabelledCapture:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.RECEIVED and not msg.is_error_frame:
            self.add(msg, BENIGN)

    def add(self, msg: can.Message, label: int) -> None:
        now = self.now
        if now is not None and msg.timestamp != now:
            # python-can's virtual bus stamps the wall clock; the in-process link already the tick's
            # time, so its frames are written as they are, uncopied
            msg = can.Message(timestamp=now, arbitration_id=msg.arbitration_id, data=msg.data,
                              is_extended_id=msg.is_extended_id, is_rx=msg.is_rx)
        self._log.on_message_received(msg)
        self._labels.write(f"{label}\n")
        self.frames += 1

    def close(self) -> None:
        self._log.stop()
        self._labels.close()


def read_labels(path: str) -> tuple[dict[str, Any], list[int]]:
    """The header and per-frame labels of capture ``path``; ValueError when it is not one."""
    with open(path + SUFFIX, encoding="ascii") as handle:
        header = json.loads(handle.readline())
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError(f"{path + SUFFIX} is not an {FORMAT}")
        return header, [int(line) for line in handle]
