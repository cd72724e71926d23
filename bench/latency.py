"""The ``latency`` phase: APP steps at random moments to ``ecu-sim`` and to the testbed loop, and
the time to the first speed frame that reflects each step.

At random moments so that the steps land all over the receiving node's period: a step that
always came just before a tick would hide the wait for the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bench import analysis
from bench.processes import Processes, actor_command, ecu_sim_command, sleep_checking
from bench.receiver import Receiver
from bench.session import APP_ID, SPEED_ID, Session


def measure(session: Session) -> dict[str, Any]:
    a, c = session.port(), session.port()
    ecu_cmd = ecu_sim_command()
    with Processes(session.logs, "latency") as procs:
        receiver = Receiver(procs, [a, c], session.raw / "latency.json")
        procs.spawn("ecu", [*ecu_cmd, "--bus-kwargs", f"port={a}", "--grade", "0",
                            "--initial-speed", "60"])
        procs.spawn("testbed", actor_command("testbed", "--port", c, "--initial-speed", 60))
        if not receiver.wait_for([(0, SPEED_ID), (1, SPEED_ID)], 60.0):
            raise RuntimeError(f"latency: the senders did not start within 60 s (logs: {session.logs})")
        procs.spawn("stimulus", actor_command("stimulus", "--ports", a, c))
        sleep_checking(session.o.latency_s, procs)
        procs.stop(["stimulus", "ecu", "testbed"])
        procs.stop(["receiver"])
        recorded = receiver.frames()
    session.latencies = latencies(recorded["frames"])
    return {name: lat.brief() for name, lat in session.latencies.items()}


def latencies(frames: Sequence[Sequence[Any]]) -> dict[str, analysis.Latency]:
    """APP-step latency of ecu-sim (port index 0) and of the testbed loop (1) in the latency phase."""
    from ecu_sim.codec.profile import Profile
    from ecu_sim.codec.role import Invalid

    profile = Profile.load("amp")

    def series(bus: int, ident: int, decode: Callable[[bytes], Any]) -> list[tuple[float, float]]:
        out = []
        for t, b, i, data in frames:
            if b == bus and i == ident:
                value = decode(bytes.fromhex(data))
                if not isinstance(value, Invalid):
                    out.append((float(t), float(value)))
        return out

    return {name: analysis.step_latency(series(bus, APP_ID, profile.app.decode),
                                        series(bus, SPEED_ID, profile.speed.decode))
            for name, bus in (("ecu-sim (ECU)", 0), ("testbed loop", 1))}
