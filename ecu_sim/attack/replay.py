"""Replay of a recorded window: the frames of a log, at their recorded spacing, inside the attack's.

The log is read whole when the attack is built (python-can's LogReader: candump ``-L``, ASC, BLF
and the other formats it knows), so a missing or empty window is refused before the run starts
and every run sends the same frames at the same ticks. A frame goes out at the tick its offset
from the window's start falls in; what the log holds past the attack's window is not sent.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import can

from ecu_sim.attack.family import ATTACKS, NOT_NEGATIVE, PATH, Context
from ecu_sim.attack.tick import Frames
from ecu_sim.registry.family import ParamError, param
from ecu_sim.runtime.ticks import ticks_in


@dataclass(frozen=True)
class Replay:
    file: str | None = param(PATH)
    start: float = param(NOT_NEGATIVE, "0", key="from")
    end: float | None = param(NOT_NEGATIVE, key="to")

    def __post_init__(self) -> None:
        if self.file is None:
            raise ParamError("replay needs file=LOG (candump -L, ASC, BLF)")


@ATTACKS.register("replay", Replay, "the frames of a log (candump -L, ASC, BLF) from FROM to TO s after its "
                  "first frame, at their recorded spacing")
def replay(p: Replay, at: Context) -> Frames:
    path, start, end = str(p.file), p.start, p.end
    recorded = _read(path, at)
    first = recorded[0].timestamp
    chosen = [msg for msg in recorded if start <= round(msg.timestamp - first, 6)
              and (end is None or round(msg.timestamp - first, 6) < end)]
    if not chosen:
        raise at.refuse(f"{path} has no frame from {start:g} s to "
                        f"{'its end' if end is None else f'{end:g} s'} after its first")
    # the tick each frame falls in, counted from the recorded window's start; the offsets to the
    # microsecond logs keep, since an epoch time's last bits would put a frame a tick early
    ticks = [ticks_in(round(msg.timestamp - first - start, 6), at.period_s) for msg in chosen]

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        low, high = bisect.bisect_left(ticks, n), bisect.bisect_right(ticks, n)
        return [can.Message(arbitration_id=msg.arbitration_id, data=msg.data, dlc=msg.dlc,
                            is_extended_id=msg.is_extended_id, is_remote_frame=msg.is_remote_frame,
                            is_fd=msg.is_fd, bitrate_switch=msg.bitrate_switch)
                for msg in chosen[low:high]]
    return frames


def _read(path: str, at: Context) -> list[can.Message]:
    """The log's data and remote frames in time order; ConfigError for a log that cannot be read."""
    try:
        with can.LogReader(path) as reader:
            frames = [msg for msg in reader if not msg.is_error_frame]
    except (OSError, ValueError) as exc:
        raise at.refuse(f"cannot read {path}: {exc}") from None
    if not frames:
        raise at.refuse(f"{path} holds no frame")
    return sorted(frames, key=lambda msg: msg.timestamp)
