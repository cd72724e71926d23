"""A stock python-can program, as a user writes one against ecu-sim: run by the tests as a process.

It opens python-can's own udp_multicast bus with python-can's defaults (hop limit 1, the default
route's interface) and speaks the built-in ``amp`` profile through cantools:

    python tests/python_can_peer.py GROUP PORT send     # a CCVS1 speed frame every 100 ms, until killed
    python tests/python_can_peer.py GROUP PORT listen N # waits for N CCVS1 frames; prints how many came

Each first prints ``sending`` or ``listening`` once its bus is open, so a test starts the other
side on that event, never after a guessed delay.

Nothing of ecu-sim is imported: this is the other side of the bus.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import can
import cantools

DBC = Path(__file__).resolve().parent.parent / "dbc" / "amp.dbc"


#: how long a listener waits for its frames at most: a hang guard, not a rule
GIVE_UP_S = 60.0


def main(group: str, port: int, mode: str, wanted: int = 0) -> None:
    database = cantools.database.load_file(DBC)
    assert isinstance(database, cantools.database.can.Database)
    speed = database.get_message_by_name("CCVS1")
    with can.Bus(interface="udp_multicast", channel=group, port=port) as bus:
        print("sending" if mode == "send" else "listening", flush=True)
        if mode == "send":
            data = speed.encode({"WheelBasedVehicleSpeed": 72.5})
            while True:
                bus.send(can.Message(arbitration_id=speed.frame_id, data=data, is_extended_id=True))
                time.sleep(0.1)
        heard = 0
        end = time.monotonic() + GIVE_UP_S
        while heard < wanted and (left := end - time.monotonic()) > 0:
            msg = bus.recv(left)
            heard += msg is not None and msg.arbitration_id == speed.frame_id
        print(heard, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], *map(int, sys.argv[4:5]))
