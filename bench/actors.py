"""The processes of a benchmark run besides ecu-sim itself: ``python -m bench.actors ROLE ...``.

- ``receiver``: the measuring ear, a separate process on one or more udp_multicast ports. It keeps
  the kernel's receive timestamp (SO_TIMESTAMPNS) of every frame, so its own scheduling does not
  enter the figures, and writes them out on SIGTERM.
- ``periodic``: the baseline a user would pick, python-can's ``bus.send_periodic`` with static
  data (a thread sleeping to absolute deadlines on these interfaces).
- ``testbed``: the original testbed's loop style, re-implemented: wait up to 110 ms for an APP
  frame, step the model with the measured interval, send, sleep the rest of the 100 ms window.
- ``stimulus``: APP steps at random moments, for the latency measurement.
- ``flood``: about 2000 unrelated frames a second on every port.
- ``hog``: a busy loop (start one per core).
- ``sleeper``: a loop that only sleeps, once or twice a period: what a wake-up costs here.
- ``floor``: the ECU's tick with no structure around it: what the same work costs in Python here.
- ``throughput``: virtual-time ticks per second of ECU + CCM in this process.

Every role runs until SIGTERM or SIGINT unless it has a duration.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

GROUP = "239.74.163.2"
#: identifiers of the flood: proprietary-B PGNs 0xFF50..0xFF5F from source 0xF0, matching no role
FLOOD_IDS = tuple(0x18FF50F0 + (i << 8) for i in range(16))
#: the python-can send_periodic baseline's identifier (its own bus; any identifier would do)
PERIODIC_ID = 0x18FEF1B1


class Stop:
    """Set by SIGTERM/SIGINT; roles poll it or wait on it."""

    def __init__(self) -> None:
        self.event = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: self.event.set())

    def __bool__(self) -> bool:
        return self.event.is_set()


def _udp_bus(port: int, **kwargs: Any) -> Any:
    """The nodes' default bus: udp_multicast kept on this host, as ecu-sim opens it."""
    from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus

    return HostLocalUdpMulticastBus(channel=GROUP, port=port, **kwargs)


# -- receiver ---------------------------------------------------------------------------------------


def receiver(ports: Sequence[int], out: str) -> None:
    """Record (kernel timestamp, bus index, identifier, payload) of every non-flood frame."""
    import msgpack
    from can.interfaces.udp_multicast.bus import GeneralPurposeUdpMulticastBus

    stop = Stop()
    links = [GeneralPurposeUdpMulticastBus(GROUP, port, hop_limit=1) for port in ports]
    by_fd = {link.fileno(): (index, link) for index, link in enumerate(links)}
    flood = set(FLOOD_IDS)
    frames: list[tuple[float, int, int, str]] = []
    flood_count = [0] * len(links)
    seen: set[tuple[int, int]] = set()
    print("ready", flush=True)
    unpackb = msgpack.unpackb
    while not stop:
        try:
            ready, _, _ = select.select(list(by_fd), [], [], 0.2)
        except InterruptedError:
            continue
        for fd in ready:
            index, link = by_fd[fd]
            result = link.recv(0.0)
            if not result:
                continue
            data, _, timestamp = result
            frame = unpackb(data, raw=False)
            ident = frame["arbitration_id"]
            if ident in flood:
                flood_count[index] += 1
                continue
            frames.append((timestamp, index, ident, bytes(frame["data"]).hex()))
            if (index, ident) not in seen:
                seen.add((index, ident))
                print(f"first {index} {ident} {timestamp:.6f}", flush=True)
    for link in links:
        link.shutdown()
    with open(out, "w", encoding="ascii") as f:
        json.dump({"ports": list(ports), "frames": frames, "flood": flood_count}, f)


# -- baselines --------------------------------------------------------------------------------------


def periodic(port: int, period: float) -> None:
    """python-can's own periodic sender with static data: the baseline a user would pick."""
    import can

    from ecu_sim.codec.profile import Profile

    stop = Stop()
    bus = _udp_bus(port)
    data = Profile.load("amp").speed.encode(80.0)
    task = bus.send_periodic(can.Message(arbitration_id=PERIODIC_ID, data=data, is_extended_id=True),
                             period)
    stop.event.wait()
    task.stop()
    bus.shutdown()


def testbed(port: int, period: float, initial_kph: float, grade_pct: float) -> None:
    """The original testbed's loop: wait up to 110 ms for APP, step with the measured dt, sleep.

    What is kept from the original is its timing style, which is what is being measured: the
    receive timeout of 1.1 periods, the model stepped with the measured interval, a missing frame
    counted as a released pedal, and "sleep for what is left of the window". Not kept: its model
    errors and its new CAN socket per tick (this uses ecu-sim's model and codec and one socket).
    """
    import can

    from ecu_sim.codec.profile import Profile
    from ecu_sim.codec.role import Invalid
    from ecu_sim.vehicle.model import TruckModel, TruckState
    from ecu_sim.vehicle.params import TruckParams

    stop = Stop()
    profile = Profile.load("amp")
    app_codec, speed_codec = profile.app, profile.speed
    bus = _udp_bus(port, can_filters=[{"can_id": app_codec.frame_id, "can_mask": 0x1FFFFFFF,
                                       "extended": True}])
    truck = TruckModel(TruckParams())
    state = TruckState.from_kph(initial_kph)
    last = time.monotonic()
    while not stop:
        window_start = time.monotonic()
        msg = bus.recv(1.1 * period)
        app = 0.0
        if msg is not None:
            value = app_codec.decode(msg.data)
            if not isinstance(value, Invalid):
                app = value
        now = time.monotonic()
        dt, last = now - last, now
        if dt > 0.0:
            state = truck.step(state, app, grade_pct, dt)
        bus.send(can.Message(arbitration_id=speed_codec.frame_id, data=speed_codec.encode(state.speed_kph),
                             is_extended_id=True))
        elapsed = time.monotonic() - window_start
        if elapsed < period:
            time.sleep(period - elapsed)
    bus.shutdown()


# -- load and stimulus ------------------------------------------------------------------------------


def stimulus(ports: Sequence[int], seed: int, low: float, high: float) -> None:
    """APP frames at random intervals of 110..190 ms, switching low/high every 2..4 frames.

    The random phase makes the arrival moments cover the receiver's whole tick period; intervals
    longer than a period mean each step is the newest frame at the next tick; shorter than the
    default hold time (three periods) so the pedal never counts as missing.
    """
    import can

    from ecu_sim.codec.profile import Profile

    stop = Stop()
    rng = random.Random(seed)
    codec = Profile.load("amp").app
    buses = [_udp_bus(port) for port in ports]
    value, left = low, rng.randint(2, 4)
    due = time.monotonic()
    while not stop:
        msg = can.Message(arbitration_id=codec.frame_id, data=codec.encode(value), is_extended_id=True)
        for bus in buses:
            bus.send(msg)
        left -= 1
        if left == 0:
            value, left = (high if value == low else low), rng.randint(2, 4)
        due += rng.uniform(0.110, 0.190)
        stop.event.wait(max(0.0, due - time.monotonic()))
    for bus in buses:
        bus.shutdown()


def flood(ports: Sequence[int], rate: float) -> None:
    """About ``rate`` frames a second of unrelated traffic on each port, in batches every 5 ms."""
    import can
    from can.interfaces.udp_multicast.utils import pack_message

    stop = Stop()
    payloads = [pack_message(can.Message(arbitration_id=ident, data=bytes(range(i, i + 8)),
                                         is_extended_id=True)) for i, ident in enumerate(FLOOD_IDS)]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, struct.pack("@I", 1))
    destinations = [(GROUP, port) for port in ports]
    per_batch = max(1, round(rate * 0.005))
    batch_period = per_batch / rate
    sent = 0
    due = time.monotonic()
    while not stop:
        for _ in range(per_batch):
            payload = payloads[sent % len(payloads)]
            for destination in destinations:
                # a full socket buffer drops a flood frame; that is what floods do
                with contextlib.suppress(OSError):
                    sock.sendto(payload, destination)
            sent += 1
        due += batch_period
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.5:
            due = time.monotonic()  # far behind (starved of CPU): do not burst to catch up
    sock.close()


def sleeper(wakes: int, period: float) -> None:
    """A loop that only sleeps to absolute deadlines, ``wakes`` times a period: the machine's price
    of a wake-up, measured beside the senders (ecu-sim and send_periodic wake once a tick)."""
    stop = Stop()
    start = time.monotonic()
    k = 0
    while not stop:
        k += 1
        for w in range(wakes, 0, -1):
            delay = start + k * period - 0.01 * period * (w - 1) - time.monotonic()
            if delay > 0:
                time.sleep(delay)


def floor(port: int, period: float) -> None:
    """The ECU's tick written as one flat loop: the least its work costs in Python on this machine.

    The same libraries and the same work as ecu-sim's ECU (python-can's host-local bus, the
    profile's codecs, the testbed model), none of its structure: one wake-up at each deadline,
    every queued frame read without waiting, the newest APP decoded, one model step, one send. No
    hold time, no counters, no listeners, no status, nothing learned about the machine. Beside
    the ECU in the same minutes, the difference in CPU per tick is the price of that structure.
    """
    import can

    from ecu_sim.codec.profile import Profile
    from ecu_sim.codec.role import Invalid
    from ecu_sim.vehicle.model import TruckModel, TruckState
    from ecu_sim.vehicle.params import TruckParams

    stop = Stop()
    profile = Profile.load("amp")
    app_codec, speed_codec = profile.app, profile.speed
    bus = _udp_bus(port)
    truck = TruckModel(TruckParams())
    state = TruckState.from_kph(80.0)
    app = 0.0
    start = time.monotonic()
    k = 0
    while not stop:
        k += 1
        delay = start + k * period - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        while (msg := bus.recv(0.0)) is not None:
            if msg.arbitration_id == app_codec.frame_id:
                value = app_codec.decode(msg.data)
                if not isinstance(value, Invalid):
                    app = value
        state = truck.step(state, app, 0.0, period)
        bus.send(can.Message(arbitration_id=speed_codec.frame_id, data=speed_codec.encode(state.speed_kph),
                             is_extended_id=True))
    bus.shutdown()


def hog() -> None:
    """Burn one core until stopped."""
    stop = Stop()
    x = 0
    while not stop:
        for _ in range(10_000):
            x += 1


# -- virtual time -----------------------------------------------------------------------------------


def throughput(link: str, seconds: float, repeats: int) -> None:
    """Loop ticks per second of ECU + CCM in virtual time: best and median, CPU and wall time."""
    import dataclasses

    from ecu_sim.runs import simulation
    from ecu_sim.runs.prepare import prepare
    from ecu_sim.runtime.ticks import ticks_in
    from ecu_sim.settings.model import RunSettings, Settings

    settings, profile = prepare(Settings(run=dataclasses.replace(RunSettings(), duration_s=seconds)))
    cpu: list[float] = []
    wall: list[float] = []
    ticks = ticks_in(seconds, settings.run.resolved_period_s)
    for _ in range(repeats):
        with simulation.Simulation(settings, simulation.Driver("ccm"), profile,
                                   link="direct" if link == "direct" else "virtual") as sim:
            c0, w0 = time.process_time(), time.perf_counter()
            sim.loop.run(ticks)
            c1, w1 = time.process_time(), time.perf_counter()
        cpu.append(ticks / (c1 - c0))
        wall.append(ticks / (w1 - w0))
    cpu.sort()
    wall.sort()
    print(json.dumps({"link": link, "ticks": ticks, "repeats": repeats,
                      "cpu_best": cpu[-1], "cpu_median": cpu[len(cpu) // 2],
                      "wall_best": wall[-1], "wall_median": wall[len(wall) // 2]}))


def startup_steps(port: int) -> None:
    """Where the time to the first frame goes, step by step, inside one fresh process."""
    marks: list[tuple[str, float]] = [("start", time.perf_counter())]

    def mark(name: str) -> None:
        marks.append((name, time.perf_counter()))

    import ecu_sim.cli

    mark("import ecu_sim.cli")
    try:  # as `ecu-sim run` does: only the command that runs is imported
        parser = ecu_sim.cli.build_parser("run")
    except TypeError:  # a CLI that builds every command's parser
        parser = ecu_sim.cli.build_parser()
    mark("import the command, build its parser")
    args = parser.parse_args(["run", "--bus-kwargs", f"port={port}", "--log-level", "warning"])
    mark("parse arguments")
    from ecu_sim.cli import common

    settings = common.settings(args)
    mark("settings")
    from ecu_sim.bus import options as bus_options
    from ecu_sim.runs.prepare import prepare

    settings, profile = prepare(settings)
    mark("load DBC profile")
    port_bus = bus_options.open_bus(bus_options.resolve_bus_options(args, settings.bus))
    mark("open bus")
    import can

    port_bus.send(can.Message(arbitration_id=profile.speed.frame_id, data=profile.speed.encode(80.0),
                              is_extended_id=True))
    mark("first frame sent")
    port_bus.shutdown()
    steps = {name: round(1e3 * (t - marks[i][1]), 1) for i, (name, t) in enumerate(marks[1:])}
    print(json.dumps(steps))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.actors")
    sub = parser.add_subparsers(dest="role", required=True)
    p = sub.add_parser("receiver")
    p.add_argument("--ports", type=int, nargs="+", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("periodic")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--period", type=float, default=0.1)
    p = sub.add_parser("testbed")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--period", type=float, default=0.1)
    p.add_argument("--initial-speed", type=float, default=80.0)
    p.add_argument("--grade", type=float, default=0.0)
    p = sub.add_parser("stimulus")
    p.add_argument("--ports", type=int, nargs="+", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--low", type=float, default=0.0)
    p.add_argument("--high", type=float, default=100.0)
    p = sub.add_parser("flood")
    p.add_argument("--ports", type=int, nargs="+", required=True)
    p.add_argument("--rate", type=float, default=2000.0)
    sub.add_parser("hog")
    p = sub.add_parser("sleeper")
    p.add_argument("--wakes", type=int, default=1)
    p.add_argument("--period", type=float, default=0.1)
    p = sub.add_parser("floor")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--period", type=float, default=0.1)
    p = sub.add_parser("throughput")
    p.add_argument("--link", choices=("direct", "virtual"), required=True)
    p.add_argument("--seconds", type=float, default=300.0)
    p.add_argument("--repeats", type=int, default=5)
    p = sub.add_parser("startup-steps")
    p.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    role = args.role
    if role == "receiver":
        receiver(args.ports, args.out)
    elif role == "periodic":
        periodic(args.port, args.period)
    elif role == "testbed":
        testbed(args.port, args.period, args.initial_speed, args.grade)
    elif role == "stimulus":
        stimulus(args.ports, args.seed, args.low, args.high)
    elif role == "flood":
        flood(args.ports, args.rate)
    elif role == "hog":
        hog()
    elif role == "sleeper":
        sleeper(args.wakes, args.period)
    elif role == "floor":
        floor(args.port, args.period)
    elif role == "throughput":
        throughput(args.link, args.seconds, args.repeats)
    elif role == "startup-steps":
        startup_steps(args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
