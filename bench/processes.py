"""Starting and stopping a phase's processes: each with a clean environment and its own log,
every one stopped when the phase ends, and a phase that fails as soon as one of them dies.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parent.parent


def child_env() -> dict[str, str]:
    """The caller's environment without python-can or ecu-sim settings leaking in.

    PYTHONDONTWRITEBYTECODE is dropped too: an installed ecu-sim has its bytecode cached, and
    start-up without it would measure the compiler rather than the program.
    """
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("CAN_", "ECU_SIM_")) and k != "PYTHONDONTWRITEBYTECODE"}


def private_bus() -> tuple[str, int]:
    """A udp_multicast group and port of one's own, drawn at random, so that a measured node hears
    no other run on this host and no other run hears it."""
    rng = random.SystemRandom()
    return f"239.255.{rng.randint(1, 254)}.{rng.randint(1, 254)}", rng.randint(20000, 60000)


def ecu_sim_command() -> list[str]:
    script = Path(sys.executable).with_name("ecu-sim")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ecu_sim"]


def actor_command(role: str, *args: object) -> list[str]:
    return [sys.executable, "-m", "bench.actors", role, *map(str, args)]


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    spawned_at: float  # time.time() just before the spawn (the receiver's clock)
    log: IO[bytes]


class Processes:
    """Every process of a phase, stopped (SIGTERM, then SIGKILL) when the phase ends."""

    def __init__(self, logs: Path, phase: str) -> None:
        self.logs = logs
        self.phase = phase
        self.procs: list[Proc] = []

    def spawn(self, name: str, argv: Sequence[str], stdout: int | None = None,
              realtime: bool = False) -> Proc:
        log = open(self.logs / f"{self.phase}-{name}.log", "wb")  # noqa: SIM115 (closed in stop)
        spawned_at = time.time()
        popen = subprocess.Popen(argv, cwd=REPO, env=child_env(), stdout=stdout or log, stderr=log,
                                 preexec_fn=_fifo if realtime else None)
        proc = Proc(name, popen, spawned_at, log)
        self.procs.append(proc)
        return proc

    def get(self, name: str) -> Proc:
        return next(p for p in self.procs if p.name == name)

    def stop(self, names: Sequence[str] | None = None) -> None:
        chosen = [p for p in self.procs if names is None or p.name in names]
        for proc in chosen:
            if proc.popen.poll() is None:
                proc.popen.send_signal(signal.SIGTERM)
        for proc in chosen:
            try:
                proc.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait()
            proc.log.close()
            self.procs.remove(proc)

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: SCHED_FIFO priority of the senders in the hog-rt phase (what systemd's CPUSchedulingPolicy=fifo
#: with CPUSchedulingPriority= would give); the hogs stay at normal priority
FIFO_PRIORITY = 10


def _fifo() -> None:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(FIFO_PRIORITY))


def fifo_allowed() -> bool:
    """Whether this user may give processes real-time priority (root or CAP_SYS_NICE/RLIMIT_RTPRIO)."""
    probe = f"import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param({FIFO_PRIORITY}))"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False).returncode == 0


def sleep_checking(seconds: float, procs: Processes) -> None:
    """Sleep, but fail early when a process of the phase died."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(left, 0.5))
        for proc in procs.procs:
            code = proc.popen.poll()
            if code is not None:
                raise RuntimeError(f"{proc.name} exited with status {code} during the phase "
                                   f"(log: {procs.logs}/{procs.phase}-{proc.name}.log)")
