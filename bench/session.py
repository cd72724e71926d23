"""What every phase of one run shares: its options, its folder, its ports, what it has measured so
far, and the identifiers of the frames it times.

The phases take a session, not the run: they build on this module and the run builds on them,
so no phase reaches back into the run that called it.
"""

from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import analysis
from bench.processes import REPO

PERIOD_S = 0.1


def _profile_ids() -> tuple[int, int]:
    """The default profile's speed and APP identifiers, from its DBC as the nodes take them."""
    from ecu_sim.codec.profile import Profile

    profile = Profile.load("amp")
    return profile.speed.frame_id, profile.app.frame_id


SPEED_ID, APP_ID = _profile_ids()


@dataclass
class Options:
    quiet_s: float = 30.0
    load_s: float = 30.0
    latency_s: float = 12.0
    startup_runs: int = 4
    throughput_repeats: int = 3
    phases: tuple[str, ...] = ("startup", "quiet", "flood", "hog", "hog-rt", "levers", "latency",
                               "throughput", "cosim", "viewers")
    out: Path = REPO / "out" / "bench"
    figure: bool = True
    port_base: int = 0
    long: bool = False
    #: repetitions of each timing phase, run in rounds (quiet, flood, hog, hog-rt, quiet, ...)
    repeats: int = 5
    #: a fourth loop in each timing phase, its ECU with the tick probe (where late ticks come from)
    probe: bool = True


class Session:
    """One run in progress: where it writes, the next free port, and what it has measured so far."""

    def __init__(self, options: Options) -> None:
        self.o = options
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.dir = options.out / stamp
        self.raw = self.dir / "raw"
        self.logs = self.dir / "logs"
        self.raw.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.ports = iter(range(options.port_base or random.randint(20000, 55000) // 10 * 10, 65000))
        self.result: dict[str, Any] = {"options": {k: (str(v) if isinstance(v, Path) else v)
                                                   for k, v in dataclasses.asdict(options).items()}}
        #: per phase: stream name -> StreamTiming (kept for the figure)
        self.timings: dict[str, dict[str, analysis.StreamTiming]] = {}
        self.latencies: dict[str, analysis.Latency] = {}

    def port(self) -> int:
        return next(self.ports)

    def say(self, text: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')}] {text}", flush=True)
