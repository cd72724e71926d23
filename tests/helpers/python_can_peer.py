"""A stock python-can program, as a user writes one against ecu-sim: run by the tests as a process.

It opens python-can's own udp_multicast bus, with python-can's defaults unless told a hop limit
(hop limit 1, the default route's interface), and speaks the built-in ``amp`` profile through
cantools:

    python tests/helpers/python_can_peer.py GROUP PORT send [--hop-limit H]  # CCVS1 every 100 ms
    python tests/helpers/python_can_peer.py GROUP PORT listen [N]  # CCVS1 frames: the count, at N or SIGTERM

Each first prints ``sending`` or ``listening`` once its bus is open, so a test starts the other
side on that event, never after a guessed delay. Nothing of ecu-sim is imported: this is the
other side of the bus.
"""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path
from types import FrameType

import can
import cantools

DBC = Path(__file__).resolve().parents[2] / "dbc" / "amp.dbc"
#: how long a listener waits for its N frames at most: a hang guard, not a rule
GIVE_UP_S = 60.0


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("group")
    parser.add_argument("port", type=int)
    parser.add_argument("mode", choices=("send", "listen"))
    parser.add_argument("wanted", type=int, nargs="?", default=None)
    parser.add_argument("--hop-limit", type=int, default=None)
    args = parser.parse_args()
    database = cantools.database.load_file(DBC)
    assert isinstance(database, cantools.database.can.Database)
    speed = database.get_message_by_name("CCVS1")
    options = {} if args.hop_limit is None else {"hop_limit": args.hop_limit}
    signal.signal(signal.SIGTERM, _stop)
    with can.Bus(interface="udp_multicast", channel=args.group, port=args.port, **options) as bus:
        print(args.mode + "ing", flush=True)
        if args.mode == "send":
            data = speed.encode({"WheelBasedVehicleSpeed": 72.5})
            while True:
                bus.send(can.Message(arbitration_id=speed.frame_id, data=data, is_extended_id=True))
                time.sleep(0.1)
        heard = 0
        end = time.monotonic() + GIVE_UP_S
        try:
            while args.wanted is None or (heard < args.wanted and time.monotonic() < end):
                msg = bus.recv(0.1)
                heard += msg is not None and msg.arbitration_id == speed.frame_id
        except KeyboardInterrupt:
            pass
        print(heard, flush=True)


if __name__ == "__main__":
    main()
