#!/usr/bin/env python3
"""An adaptive cruise control for a J1939 truck: follow a lead vehicle at a time gap with TSC1 and XBR.

Written as a user would write one, with python-can for the bus and cantools for the layouts of
ecu-sim's J1939 DBC (dbc/j1939.dbc, or the installed package's copy), and nothing else of
ecu-sim. Every 20 ms it reads the truck's speed (CCVS1), moves a simulated lead vehicle along the
speed profile of a CSV file (time_s, lead_speed_kph), and commands the truck from source address
0x2A: TSC1 torque control to the engine (0x00) and XBR to the brakes (0x0B), each with its
message counter and checksum. On exit it releases both (override disabled) and prints the
smallest gap it kept.

  ecu-sim --vehicle class6 --profile j1939 --network powertrain --grade 0 &
  python3 examples/acc.py --lead examples/lead.csv --duration 60 --log acc.csv

The controller is deliberately simple: a reference speed from the lead's speed and the gap
error, a PI speed controller for the engine torque, and a deceleration demand for the brakes when
the reference asks for more than the engine's drag gives.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import importlib.resources
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import can
import cantools
from cantools.database.can import Database, Message

SOURCE = 0x2A  # adaptive cruise control
PERIOD_S = 0.02
KPH = 3.6
# TSC1 and XBR fields (J1939-71)
TORQUE_CONTROL, OVERRIDE_DISABLED = 2, 0
LOWEST_PRIORITY = 3  # 11: cruise control and comfort functions
CRUISE_PURPOSE = 1  # P2
RATE_20_MS = 6
XBR_MAXIMUM = 2  # control mode 10: the larger of the driver's and our demand
EBI_ALLOWED = 2  # endurance brakes may take part
ACC_PRIORITY = 2
# the controller
GAP_GAIN = 0.2  # 1/s: reference speed per metre of gap error
SPEED_GAIN = 0.6  # 1/s: acceleration per m/s of speed error
KP, KI = 20.0, 2.0  # torque % per km/h, per km/h and second
BRAKE_BELOW = -0.4  # m/s^2: asking for less than this calls for the brakes
MAX_ACCEL, MAX_DECEL = 1.0, -3.0  # m/s^2
SPEED_LOST_S = 1.0


def load_dbc(path: Path | None) -> Database:
    """``path``, else the source tree's dbc/j1939.dbc beside this file, else the installed ecu-sim's."""
    if path is None:
        here = Path(__file__).resolve().parent.parent / "dbc" / "j1939.dbc"
        text = (here.read_text(encoding="utf-8") if here.is_file() else
                (importlib.resources.files("ecu_sim.dbc") / "j1939.dbc").read_text(encoding="utf-8"))
    else:
        text = path.read_text(encoding="utf-8")
    db = cantools.database.load_string(text, "dbc")
    assert isinstance(db, Database)
    return db


def by_spn(message: Message) -> dict[int, str]:
    return {signal.spn: signal.name for signal in message.signals if signal.spn}


def find(db: Database, spn: int, destination: int | None = None) -> Message:
    """The DBC's message carrying ``spn`` (a destination-specific one addressed to ``destination``)."""
    for message in db.messages:
        if spn in by_spn(message) and (destination is None or (message.frame_id >> 8) & 0xFF == destination):
            return message
    raise SystemExit(f"the DBC has no message with SPN {spn}")


def speed_of(message: Message, name: str, data: bytes | bytearray) -> float | None:
    """The wheel-based speed of a CCVS1 payload, None when it says "not available" or "error"."""
    value = message.decode(bytes(data), decode_choices=False)
    speed = value[name] if isinstance(value, dict) else None
    return float(speed) if isinstance(speed, (int, float)) and speed <= 250.996 else None


def pgn(frame_id: int) -> int:
    value = (frame_id >> 8) & 0x3FFFF
    return value & 0x3FF00 if (value >> 8) & 0xFF < 240 else value


def tsc1_checksum(total: int) -> int:
    """J1939-71's TSC1 checksum (0..7) of the sum S."""
    return (((total >> 6) & 0x03) + (total >> 3) + total) & 0x07


def xbr_checksum(total: int) -> int:
    """J1939-71's XBR checksum (0..15) of the sum S."""
    return ((total >> 4) + total) & 0x0F


class Command:
    """One command message from our address: values by SPN, counter and checksum filled in.

    S is the sum of bytes 1..7, the counter and the identifier's four bytes (J1939-71); the
    counter goes up by one each frame, through ``counts`` values.
    """

    def __init__(self, message: Message, counter_spn: int, checksum_spn: int, counts: int,
                 fold: Callable[[int], int]) -> None:
        self.message = message
        self.frame_id = (message.frame_id & 0x1FFFFF00) | SOURCE
        self.names = by_spn(message)
        self.counter_name, self.checksum_name = self.names[counter_spn], self.names[checksum_spn]
        self.counts, self.fold = counts, fold
        self.counter = 0

    def frame(self, values: dict[int, float]) -> can.Message:
        signals: dict[str, float] = {}
        for signal in self.message.signals:  # "not available" (all ones) unless given
            signals[signal.name] = (2 ** signal.length - 1) * signal.scale + signal.offset
        signals.update({self.names[spn]: value for spn, value in values.items()})
        signals[self.counter_name] = self.counter
        signals[self.checksum_name] = 0
        data = self.message.encode(signals, padding=True, strict=False)
        total = sum(data[:7]) + self.counter + sum(self.frame_id.to_bytes(4, "little"))
        signals[self.checksum_name] = self.fold(total)
        data = self.message.encode(signals, padding=True, strict=False)
        self.counter = (self.counter + 1) % self.counts
        return can.Message(arbitration_id=self.frame_id, data=data, is_extended_id=True)


class Lead:
    """The lead vehicle: speed interpolated from the CSV (held after its last row), position integrated."""

    def __init__(self, path: Path) -> None:
        with path.open(newline="", encoding="utf-8") as file:
            rows = [(float(row[0]), float(row[1])) for row in csv.reader(file) if row and _number(row[0])]
        if not rows:
            raise SystemExit(f"{path}: no rows of time_s,lead_speed_kph")
        self.times = [t for t, _ in rows]
        self.speeds = [v for _, v in rows]

    def speed_kph(self, t: float) -> float:
        i = bisect.bisect_right(self.times, t)
        if i == 0:
            return self.speeds[0]
        if i == len(self.times):
            return self.speeds[-1]
        t0, t1, v0, v1 = self.times[i - 1], self.times[i], self.speeds[i - 1], self.speeds[i]
        return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class Controller:
    """Reference speed from the gap, PI torque, brake demand below what coasting gives."""

    def __init__(self, time_gap_s: float, standstill_m: float, max_speed_kph: float) -> None:
        self.time_gap_s, self.standstill_m, self.max_speed_kph = time_gap_s, standstill_m, max_speed_kph
        self.integral = 0.0

    def desired_gap(self, speed_mps: float) -> float:
        return self.standstill_m + self.time_gap_s * speed_mps

    def step(self, gap_m: float, own_mps: float, lead_mps: float, dt: float) -> tuple[float, float | None]:
        """(engine torque %, brake acceleration demand in m/s^2 or None)."""
        reference = lead_mps + GAP_GAIN * (gap_m - self.desired_gap(own_mps))
        reference = min(max(0.0, reference), self.max_speed_kph / KPH)
        accel = min(max(MAX_DECEL, SPEED_GAIN * (reference - own_mps)), MAX_ACCEL)
        if accel < BRAKE_BELOW:
            self.integral = 0.0  # the engine idles while the brakes work
            return 0.0, accel
        error_kph = (reference - own_mps) * KPH
        candidate = min(max(0.0, self.integral + KI * error_kph * dt), 100.0)
        torque = KP * error_kph + candidate
        if 0.0 <= torque <= 100.0 or (torque > 100.0) != (error_kph > 0.0):
            self.integral = candidate  # no wind-up while the torque is saturated
        return min(max(0.0, KP * error_kph + self.integral), 100.0), None


@contextmanager
def open_bus(args: argparse.Namespace) -> Iterator[can.BusABC]:
    kwargs: dict[str, Any] = {}
    if args.interface == "udp_multicast":
        kwargs["port"] = args.port
        if args.hop_limit is not None:
            kwargs["hop_limit"] = args.hop_limit
    bus = can.Bus(interface=args.interface, channel=args.channel, **kwargs)
    try:
        yield bus
    finally:
        bus.shutdown()


def release(tsc1: Command, xbr: Command) -> list[can.Message]:
    """TSC1 and XBR with override disabled, the XBR with a valid demand of 0 (a "not available"
    demand is one a brake controller may refuse even in a release)."""
    return [tsc1.frame({695: OVERRIDE_DISABLED, 897: LOWEST_PRIORITY, 3349: RATE_20_MS,
                        3350: CRUISE_PURPOSE}),
            xbr.frame({2920: 0.0, 2914: EBI_ALLOWED, 2915: ACC_PRIORITY, 2916: OVERRIDE_DISABLED,
                       4818: 0.0})]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    bus = parser.add_argument_group("bus (python-can)")
    bus.add_argument("-i", "--interface", default="udp_multicast", help="default udp_multicast")
    bus.add_argument("-c", "--channel", default="239.74.163.2",
                     help="multicast group or CAN interface, e.g. vcan0 (default: ecu-sim's group)")
    bus.add_argument("--port", type=int, default=43113, help="udp_multicast port (default 43113)")
    bus.add_argument("--hop-limit", type=int, help="udp_multicast: 0 keeps the frames on this host")
    parser.add_argument("--dbc", type=Path, default=None, help="default: ecu-sim's dbc/j1939.dbc")
    parser.add_argument("--lead", type=Path, required=True, help="CSV time_s,lead_speed_kph")
    parser.add_argument("--gap", type=float, default=1.5, help="time gap, s (default 1.5)")
    parser.add_argument("--standstill", type=float, default=5.0, help="gap at standstill, m (default 5)")
    parser.add_argument("--min-gap", type=float, default=10.0,
                        help="the gap it must never go below, m (default 10); exit status 1 if it does")
    parser.add_argument("--max-speed", type=float, default=90.0, help="km/h (default 90)")
    parser.add_argument("--duration", type=float, default=60.0, help="s (default 60)")
    parser.add_argument("--speed-lost", type=float, default=SPEED_LOST_S, metavar="SECONDS",
                        help=f"release and exit 1 when no speed came for so long (default {SPEED_LOST_S:g})")
    parser.add_argument("--log", type=Path, help="CSV: t_s, speeds, gap, commands, one row per 20 ms")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    db = load_dbc(args.dbc)
    speed_message = find(db, 84)  # wheel-based vehicle speed, CCVS1
    speed_name = by_spn(speed_message)[84]
    engine = (find(db, 513).frame_id & 0xFF)  # the sender of the actual engine torque, EEC1
    tsc1 = Command(find(db, 518, destination=engine), 4206, 4207, 8, tsc1_checksum)
    xbr = Command(find(db, 2920), 3189, 3188, 16, xbr_checksum)
    lead = Lead(args.lead)
    controller = Controller(args.gap, args.standstill, args.max_speed)
    log = None if args.log is None else args.log.open("w", newline="", encoding="utf-8")
    writer = None if log is None else csv.writer(log)
    if writer is not None:
        writer.writerow(["t_s", "own_speed_kph", "lead_speed_kph", "gap_m", "desired_gap_m",
                         "torque_pct", "xbr_mps2"])
    speed_pgn = pgn(speed_message.frame_id)
    own_kph: float | None = None
    heard = 0.0
    status = 0
    with open_bus(args) as bus:
        start = time.monotonic()
        while own_kph is None:  # the truck's speed first: the lead starts the desired gap ahead
            msg = bus.recv(0.1)
            if msg is not None and msg.is_extended_id and pgn(msg.arbitration_id) == speed_pgn:
                own_kph = speed_of(speed_message, speed_name, msg.data)
            elif time.monotonic() - start > 10.0:
                print("no CCVS1 (the truck's speed) on the bus within 10 s: is ecu-sim running there?",
                      file=sys.stderr)
                return 1
        gap = controller.desired_gap(own_kph / KPH)
        min_gap, min_at = gap, 0.0
        start = previous = heard = time.monotonic()
        deadline = start
        try:
            while (now := time.monotonic()) - start < args.duration:
                while (wait := deadline - time.monotonic()) > 0:
                    msg = bus.recv(wait)
                    if msg is not None and msg.is_extended_id and pgn(msg.arbitration_id) == speed_pgn:
                        speed = speed_of(speed_message, speed_name, msg.data)
                        if speed is not None:
                            own_kph, heard = speed, time.monotonic()
                now = time.monotonic()
                if now - heard > args.speed_lost:
                    print(f"lost the truck's speed for {now - heard:.1f} s: released", file=sys.stderr)
                    status = 1
                    break
                t, dt = now - start, now - previous
                previous = now
                lead_kph = lead.speed_kph(t)
                gap += (lead_kph - own_kph) / KPH * dt
                if gap < min_gap:
                    min_gap, min_at = gap, t
                torque, brake = controller.step(gap, own_kph / KPH, lead_kph / KPH, dt)
                bus.send(tsc1.frame({695: TORQUE_CONTROL, 696: 0, 897: LOWEST_PRIORITY, 518: round(torque),
                                     3349: RATE_20_MS, 3350: CRUISE_PURPOSE}))
                mode = OVERRIDE_DISABLED if brake is None else XBR_MAXIMUM
                bus.send(xbr.frame({2920: 0.0 if brake is None else brake, 2914: EBI_ALLOWED,
                                    2915: ACC_PRIORITY, 2916: mode, 4818: 0.0}))
                if writer is not None:
                    writer.writerow([f"{t:.3f}", f"{own_kph:.3f}", f"{lead_kph:.3f}", f"{gap:.3f}",
                                     f"{controller.desired_gap(own_kph / KPH):.3f}", f"{torque:.1f}",
                                     "" if brake is None else f"{brake:.3f}"])
                deadline = max(deadline + PERIOD_S, time.monotonic())  # late: no burst to catch up
        finally:  # release the engine and the brakes: override disabled, once each
            for frame in release(tsc1, xbr):
                bus.send(frame)
            if log is not None:
                log.close()
    print(f"minimum gap {min_gap:.1f} m at {min_at:.1f} s (limit {args.min_gap:g} m)")
    if min_gap < args.min_gap:
        print(f"the gap went below {args.min_gap:g} m", file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
