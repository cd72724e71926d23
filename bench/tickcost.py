"""The CPU parts of a tick, each timed alone: ``python -m bench.tickcost [--scale S]``; prints JSON.

Run natively and, by ``bench/arm.py``, under qemu's user-mode emulation in the boards' root file
systems, in the same minutes: the ratio per part says which parts the other instruction set
makes dearer. Only CPU work is timed (``time.process_time``); waking up and the system calls of
a real bus belong to the emulating host, not to the board, so they are left out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any


def per_call_us(work: Callable[[], object], calls: int) -> float:
    """Microseconds of CPU per call of ``work``, best of three rounds of ``calls``."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for _ in range(calls):
            work()
        best = min(best, (time.process_time() - start) / calls)
    return 1e6 * best


def parts(scale: float) -> dict[str, float]:
    """Each part of a tick's CPU work, in microseconds per call."""
    import can
    from can.interfaces.udp_multicast.utils import pack_message, unpack_message

    from ecu_sim.codec.profile import Profile
    from ecu_sim.vehicle.model import TruckModel, TruckState
    from ecu_sim.vehicle.params import TruckParams

    n = max(10, int(2000 * scale))
    profile = Profile.load("amp")
    app_data = profile.app.encode(42.0)
    truck = TruckModel(TruckParams())
    state = TruckState.from_kph(80.0)
    msg = can.Message(arbitration_id=profile.speed.frame_id, data=profile.speed.encode(80.0),
                      is_extended_id=True)
    packed = pack_message(msg)
    return {
        "decode APP (codec)": per_call_us(lambda: profile.app.decode(app_data), n),
        "model step": per_call_us(lambda: truck.step(state, 42.0, 1.0, 0.1), n),
        "encode speed (codec)": per_call_us(lambda: profile.speed.encode(80.0), n),
        "can.Message": per_call_us(lambda: can.Message(arbitration_id=msg.arbitration_id, data=msg.data,
                                                       is_extended_id=True), n),
        "udp_multicast pack": per_call_us(lambda: pack_message(msg), n),
        "udp_multicast unpack (checked)": per_call_us(lambda: unpack_message(packed, check=True), n),
        "loop tick, ECU + CCM, in-process link": loop_tick_us(max(50, int(3000 * scale))),
        **powertrain_seconds_us(max(2, int(30 * scale))),
    }


def loop_tick_us(ticks: int) -> float:
    """A whole virtual-time tick of ECU and CCM: drain, decode, step, encode, send, both nodes."""
    import dataclasses

    from ecu_sim.runs import simulation
    from ecu_sim.runs.prepare import prepare
    from ecu_sim.settings.model import RunSettings, Settings

    settings, profile = prepare(Settings(run=dataclasses.replace(RunSettings(), duration_s=3600.0)))
    best = float("inf")
    for _ in range(3):
        with simulation.Simulation(settings, simulation.DriverSetup("ccm"), profile, link="direct") as sim:
            start = time.process_time()
            sim.loop.run(ticks)
            best = min(best, (time.process_time() - start) / ticks)
    return 1e6 * best


def powertrain_seconds_us(seconds: int) -> dict[str, float]:
    """A simulated second of the class6 truck on the j1939 profile with its CCM: the single node at
    its 100 ms tick, and ``--network powertrain`` at its 10 ms base tick (the CCM every 10th)."""
    import dataclasses

    from ecu_sim.runs import simulation
    from ecu_sim.runs.prepare import prepare
    from ecu_sim.settings.model import J1939Settings, ProfileSettings, RunSettings, Settings, VehicleSettings

    found = {}
    for network in ("single", "powertrain"):
        settings, profile = prepare(Settings(
            profile=ProfileSettings(name="j1939"), vehicle=VehicleSettings(preset="class6"),
            run=dataclasses.replace(RunSettings(), duration_s=3600.0, grade_pct=0.0),
            j1939=J1939Settings(network=network)))
        ticks = round(seconds / settings.run.resolved_period_s)
        best = float("inf")
        for _ in range(3):
            driver = simulation.DriverSetup("ccm")
            with simulation.Simulation(settings, driver, profile, link="direct") as sim:
                sim.loop.run(round(1.0 / settings.run.resolved_period_s))  # past the claims and start-up
                start = time.process_time()
                sim.loop.run(ticks)
                best = min(best, (time.process_time() - start) / seconds)
        found[f"simulated second, class6 j1939 {network}, ECU + CCM"] = 1e6 * best
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tickcost")
    parser.add_argument("--scale", type=float, default=1.0, help="fewer calls below 1 (emulation)")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"machine": sys.implementation.name + " " + sys.version.split()[0],
                              "us": parts(args.scale)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
