"""The ``startup`` phase: from process start to the first frame at a listener, the import-time
breakdown, and the steps inside one start.

The first frame is read on the bus, as a peer would see it, because that is what a start costs
a user; the import times and the steps say where that time goes.
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import time
from typing import Any

from bench import analysis
from bench.processes import REPO, Processes, actor_command, child_env, ecu_sim_command
from bench.roles import GROUP
from bench.session import APP_ID, SPEED_ID, Session
from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus


def measure(session: Session) -> dict[str, Any]:
    """One start at a time, so no start shares the machine with another."""
    port = session.port()
    runs: dict[str, list[float]] = {"ecu-sim": [], "ecu-sim ccm": []}
    bare: list[float] = []
    for _ in range(session.o.startup_runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=child_env(), check=True)
        bare.append(time.perf_counter() - t0)
    # one warm-up start writes the bytecode cache, as an installation would have
    subprocess.run([*ecu_sim_command(), "--help"], env=child_env(), capture_output=True, check=True)
    listener = HostLocalUdpMulticastBus(channel=GROUP, port=port)
    try:
        with Processes(session.logs, "startup") as procs:
            for i in range(session.o.startup_runs):
                for command, ident in (("ecu-sim", SPEED_ID), ("ecu-sim ccm", APP_ID)):
                    extra = ["ccm"] if command.endswith("ccm") else []
                    name = f"{command.replace(' ', '-')}-{i}"
                    proc = procs.spawn(name, [*ecu_sim_command(), *extra, "--bus-kwargs",
                                              f"port={port}", "--log-level", "warning"])
                    runs[command].append(_first_frame(listener, ident, proc.spawned_at) -
                                         proc.spawned_at)
                    procs.stop([name])
    finally:
        listener.shutdown()
    imports = subprocess.run(
        [sys.executable, "-X", "importtime", *ecu_sim_command(), "--duration", "0.3",
         "--bus-kwargs", f"port={port}", "--log-level", "warning"],
        env=child_env(), capture_output=True, text=True, check=False)
    steps = subprocess.run(actor_command("startup-steps", "--port", port), cwd=REPO, env=child_env(),
                           capture_output=True, text=True, check=True)
    return {
        "first_frame_s": {k: {"runs": [round(v, 4) for v in vs], "median": analysis.percentile(vs, 50),
                              "max": max(vs)} for k, vs in runs.items()},
        "bare_interpreter_s": analysis.percentile(bare, 50),
        "imports": dataclasses.asdict(analysis.import_times(imports.stderr.splitlines())),
        "steps_ms": json.loads(steps.stdout),
    }


def _first_frame(listener: Any, ident: int, after: float, timeout: float = 20.0) -> float:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        msg = listener.recv(left)
        if msg is not None and msg.arbitration_id == ident and msg.timestamp >= after:
            return float(msg.timestamp)
    return math.nan
