"""The roles that time themselves inside one fresh process and print their figures as JSON.

A process of their own keeps the orchestrator's imports and threads out of what they time.
"""

from __future__ import annotations

import json
import time


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
        with simulation.Simulation(settings, simulation.DriverSetup("ccm"), profile,
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
    from ecu_sim.settings.values import bus_value

    settings = common.settings(args)
    mark("settings")
    from ecu_sim.bus import options as bus_options
    from ecu_sim.runs.prepare import prepare

    settings, profile = prepare(settings)
    mark("load DBC profile")
    port_bus = bus_options.open_bus(bus_options.resolve_bus_options(args, settings.bus, bus_value))
    mark("open bus")
    import can

    port_bus.send(can.Message(arbitration_id=profile.speed.frame_id, data=profile.speed.encode(80.0),
                              is_extended_id=True))
    mark("first frame sent")
    port_bus.shutdown()
    steps = {name: round(1e3 * (t - marks[i][1]), 1) for i, (name, t) in enumerate(marks[1:])}
    print(json.dumps(steps))
