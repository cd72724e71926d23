"""The recorder's own CPU per tick, on frames handed to it directly: ``python -m bench.recorder``.

``--record`` (and ``--web``, which records from tick 0) costs a real-time node more than the
recorder's Python: a recording node also hears its own frames back from the host-local bus, to
write them with the time the bus carried them. This benchmark takes the bus away and feeds
:class:`~ecu_sim.io.recorder.Recorder` the frames of a tick as a port would (each frame the node
sends, its echo, a frame of another node), so the figure is the recorder's part alone and can be
set beside a real node's extra CPU with ``--record`` (docs/performance.md). The frames are made
before the clock starts. Prints JSON: microseconds of CPU per tick, best of three rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.io.recorder import Recorder

#: per node: the period, frames the node sends a tick (each echoed), frames of others a tick
TICKS = {"testbed, 10 Hz": (0.1, 2, 1), "powertrain, 10 ms": (0.01, 2, 0)}


def _frames(ticks: int, sent: int, received: int, period: float) -> list[list[tuple[can.Message, Direction]]]:
    """Each tick's frames in the order a port shows them: sent, echoed, then another node's."""
    out = []
    for tick in range(ticks):
        at = 1000.0 + tick * period
        frames: list[tuple[can.Message, Direction]] = []
        for k in range(sent):
            data = bytes([tick & 0xFF, k, 3, 4, 5, 6, 7, 8])
            frames.append((can.Message(arbitration_id=0x18FEF100 + k, data=data), Direction.SENT))
            frames.append((can.Message(timestamp=at + k * 1e-4, arbitration_id=0x18FEF100 + k, data=data,
                                       channel="bench"), Direction.ECHO))
        frames += [(can.Message(timestamp=at + 5e-4, arbitration_id=0x18F00326, data=bytes(8),
                                channel="bench"), Direction.RECEIVED) for _ in range(received)]
        out.append(frames)
    return out


def per_tick_us(period: float, sent: int, received: int, ticks: int) -> float:
    """Microseconds of CPU per tick of a recorder writing to a temporary folder, best of three."""
    best = float("inf")
    for _ in range(3):
        frames = _frames(ticks, sent, received, period)
        with tempfile.TemporaryDirectory() as folder:
            recorder = Recorder(os.path.join(folder, "run.log"), 0, {"bench": True}, period_s=period,
                                channel="bench")
            start = time.process_time()
            for tick, tick_frames in enumerate(frames):
                for msg, direction in tick_frames:
                    recorder.on_frame(msg, direction)
                recorder.on_tick(tick, 0.0, True)
            best = min(best, (time.process_time() - start) / ticks)
            recorder.stop()
    return round(best * 1e6, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=5000, help="ticks a round")
    args = parser.parse_args()
    print(json.dumps({node: per_tick_us(period, sent, received, args.ticks)
                      for node, (period, sent, received) in TICKS.items()}, indent=1))


if __name__ == "__main__":
    main()
