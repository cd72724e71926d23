#!/usr/bin/env python3
"""A cruise controller under test, written with python-can alone: the testbed's CCM as another
program would be, for `ecu-sim campaign examples/controller.toml`.

It hears the ECU's wheel-based speed (0x18FEF125, bytes 5..6, 1/256 km/h) and sends the
accelerator pedal (0x18F00326, byte 6, 1 %/bit, offset -125 %) every 100 ms from a PI controller
with ecu-sim's gains and anti-windup. Until it has heard a speed it sends APP 0. SIGTERM ends it.

  python3 examples/cut_ccm.py --channel 239.74.163.2 --port 43113 --set-speed 90
"""

from __future__ import annotations

import argparse
import math
import signal
import time

import can

SPEED_ID, APP_ID = 0x18FEF125, 0x18F00326
PERIOD_S = 0.1


def gains(speed_kph: float) -> tuple[float, float]:
    """kp in % APP per km/h and ki in % APP per km/h s at this speed."""
    return 20.0, 2.0


class PI:
    """ecu-sim's PI cruise controller: conditional integration, output clamped to 0..100 %."""

    def __init__(self) -> None:
        self.integral = 0.0

    def step(self, set_kph: float, speed_kph: float, dt_s: float) -> float:
        kp, ki = gains(speed_kph)
        error = set_kph - speed_kph
        if not math.isfinite(error):
            error = 0.0
        p_term = kp * error
        integral = min(max(0.0, self.integral), 100.0)
        candidate = integral + ki * error * dt_s
        unclamped = p_term + candidate
        if not ((unclamped > 100.0 and error > 0.0) or (unclamped < 0.0 and error < 0.0)):
            integral = min(max(0.0, candidate), 100.0)
        self.integral = integral
        return min(max(0.0, p_term + integral), 100.0)


def app_frame(app_pct: float) -> can.Message:
    data = bytearray(b"\xff" * 8)
    data[6] = round(app_pct) + 125
    return can.Message(arbitration_id=APP_ID, data=data, is_extended_id=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channel", required=True, help="the udp_multicast group")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--set-speed", type=float, required=True, help="km/h")
    args = parser.parse_args()
    running = True

    def stop(signum: int, frame: object) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    controller, speed = PI(), None
    with can.Bus(interface="udp_multicast", channel=args.channel, port=args.port, hop_limit=0) as bus:
        due = time.monotonic()
        while running:
            msg = bus.recv(max(0.0, due - time.monotonic()))
            if msg is not None and msg.arbitration_id == SPEED_ID and len(msg.data) >= 7:
                speed = int.from_bytes(msg.data[5:7], "little") / 256.0
            if time.monotonic() >= due:
                app = 0.0 if speed is None else controller.step(args.set_speed, speed, PERIOD_S)
                bus.send(app_frame(app))
                due += PERIOD_S


if __name__ == "__main__":
    main()
