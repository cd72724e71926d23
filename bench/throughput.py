"""The ``throughput`` phase: virtual-time ticks per second, of ``ecu-sim simulate`` as a user runs it
and of ECU + CCM in one process on the in-process link and on python-can's ``virtual`` bus.

The command's own figure counts the loop alone; the in-process runs add the CPU time, so a rate
that moves with the machine's load can be told from one that moves with the code.
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import subprocess
import time
from typing import Any

from bench.processes import REPO, actor_command, child_env, ecu_sim_command
from bench.session import Session


def measure(session: Session) -> dict[str, Any]:
    """The command first, as a user runs it, then the same loop in one process on each link."""
    cli = _simulate_cli(session)
    class6 = sorted(r["reported_ticks_per_s"] for r in _simulate_cli(session, "--vehicle", "class6",
                                                                     "--route", "appendix-d"))
    links = {}
    for link in ("direct", "virtual"):
        done = subprocess.run(actor_command("throughput", "--link", link, "--seconds", 300,
                                            "--repeats", 2 + session.o.throughput_repeats),
                              cwd=REPO, env=child_env(), capture_output=True, text=True, check=True)
        links[link] = json.loads(done.stdout)
    reported = sorted(r["reported_ticks_per_s"] for r in cli)
    return {"simulate_cli": cli, "simulate_cli_best": reported[-1],
            "simulate_cli_median": reported[len(reported) // 2],
            "class6_cli_best": class6[-1],
            "class6_cli_median": class6[len(class6) // 2],
            "in_process": links, "loadavg": os.getloadavg()}


def _simulate_cli(session: Session, *extra: str) -> list[dict[str, float]]:
    """``ecu-sim simulate --duration 3600`` (with ``extra``), its own ticks/s and its CPU time."""
    cli: list[dict[str, float]] = []
    for _ in range(session.o.throughput_repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run([*ecu_sim_command(), "simulate", "--duration", "3600", *extra],
                              env=child_env(), capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        match = re.search(r"\((\d+) ticks, (\d+) ticks/s[,)]", done.stderr)  # then the real-time factor
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        cli.append({"reported_ticks_per_s": float(match.group(2)) if match else math.nan,
                    "process_wall_s": wall, "process_cpu_s": cpu})
    return cli
