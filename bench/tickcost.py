"""The CPU parts of a tick, each timed alone: ``python -m bench.tickcost [--scale S]``; prints JSON.

Run natively and, by ``bench/arm.py``, under qemu's user-mode emulation in the boards' root file
systems, in the same minutes: the ratio per part says which parts the other instruction set
makes dearer. Only CPU work is timed (``time.process_time``); waking up and the system calls of
a real bus belong to the emulating host, not to the board, so they are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ecu_sim.settings.model import J1939Settings


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
    its 100 ms tick, ``--network powertrain`` at its 10 ms base tick (the CCM every 10th), and the
    powertrain with ``--fms`` and a restbus of 30 messages (:func:`restbus_dbc`) on top; the
    powertrain with ``--fms`` and a ``--control`` due at the end, so the desk that would apply it
    is a tick observer through the whole run, beside the same case without it."""
    from ecu_sim.settings.model import J1939Settings

    found = {}
    with tempfile.TemporaryDirectory() as folder:
        restbus = os.path.join(folder, "restbus30.dbc")
        with open(restbus, "w", encoding="utf-8") as out:
            out.write(restbus_dbc())
        powertrain = J1939Settings(network="powertrain")
        controls = ("stop:TCO1@3599",)  # due after the measured seconds: the desk's own cost
        #: per case: the network's settings, whether ``--fms`` is on, the ``--control``s
        cases = {"single": (J1939Settings(network="single"), False, ()),
                 "powertrain": (powertrain, False, ()),
                 "powertrain + fms + 30-message restbus": (J1939Settings(network="powertrain",
                                                                         restbus=(restbus,)), True, ()),
                 "powertrain + fms": (powertrain, True, ()),
                 "powertrain + fms + a --control": (powertrain, True, controls)}
        for name, (j1939, fms, planned) in cases.items():
            found[f"simulated second, class6 j1939 {name}, ECU + CCM"] = _second_us(j1939, fms, seconds,
                                                                                    planned)
    return found


def _second_us(j1939: J1939Settings, fms: bool, seconds: int, controls: tuple[str, ...] = ()) -> float:
    """CPU microseconds per simulated second, best of three, past the claims and start-up."""
    import dataclasses

    from ecu_sim.runs import simulation
    from ecu_sim.runs.prepare import prepare
    from ecu_sim.settings.model import (
        ControlSettings,
        FmsSettings,
        ProfileSettings,
        RunSettings,
        Settings,
        VehicleSettings,
    )

    settings, profile = prepare(Settings(
        profile=ProfileSettings(name="j1939"), vehicle=VehicleSettings(preset="class6"),
        run=dataclasses.replace(RunSettings(), duration_s=3600.0, grade_pct=0.0),
        j1939=j1939, fms=FmsSettings(enabled=fms), controls=ControlSettings(apply=controls)))
    ticks = round(seconds / settings.run.resolved_period_s)
    best = float("inf")
    for _ in range(3):
        with simulation.Simulation(settings, simulation.DriverSetup("ccm"), profile, link="direct") as sim:
            sim.loop.run(round(1.0 / settings.run.resolved_period_s))
            start = time.process_time()
            sim.loop.run(ticks)
            best = min(best, (time.process_time() - start) / seconds)
    return 1e6 * best


def restbus_dbc() -> str:
    """A restbus of 30 messages from three nodes (0x21, 0x22, 0x23): ten every 20 ms, ten every
    100 ms, ten every second, each of four signals, one of them the truck's speed (SPN 84)."""
    lines = ['VERSION ""', "BU_: N21 N22 N23"]
    attributes = ['BA_DEF_ BU_ "NmStationAddress" INT 0 255;', 'BA_DEF_ BO_ "GenMsgCycleTime" INT 0 3600000;',
                  'BA_DEF_ SG_ "SPN" INT 0 524287;', 'BA_DEF_DEF_ "NmStationAddress" 254;',
                  'BA_DEF_DEF_ "GenMsgCycleTime" 0;', 'BA_DEF_DEF_ "SPN" 0;']
    for node in (0x21, 0x22, 0x23):
        attributes.append(f'BA_ "NmStationAddress" BU_ N{node:02X} {node};')
    for k in range(30):
        node = 0x21 + k % 3
        frame_id = 0x80000000 | (6 << 26) | ((0xFF00 + k) << 8) | node
        lines.append(f"BO_ {frame_id} M{k}: 8 N{node:02X}")
        lines += [f' SG_ S{k}_{i} : {16 * i}|16@1+ (0.00390625,0) [0|250.996] "" Vector__XXX'
                  for i in range(4)]
        attributes.append(f'BA_ "GenMsgCycleTime" BO_ {frame_id} {(20, 100, 1000)[k // 10]};')
        attributes.append(f'BA_ "SPN" SG_ {frame_id} S{k}_0 84;')
    return "\n".join([*lines, *attributes, ""])


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
