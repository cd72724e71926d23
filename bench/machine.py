"""What the machine is and how busy it is: its description for the results, and the CPU time of
processes, of this orchestrator and of the whole machine, read from /proc.

Apart from the phases because every phase reads the same counters the same way, and a
background figure only means something when they all do.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.processes import REPO


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` so far (schedstat: nanoseconds; falls back to stat)."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return math.nan


def peak_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return math.nan


def kernel_workers() -> list[int]:
    """The kernel threads that take over network receive work under load (ksoftirqd/N): a flood
    of ours keeps them busy, and their time would otherwise pass for background load."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().startswith("ksoftirqd"):
                    found.append(int(pid))
    return found


def system_busy() -> tuple[float, float, float, float]:
    """(busy, steal, all, interrupt) CPU seconds of the whole machine, "all" being cores times
    the monotonic clock.

    Busy is what is neither idle, nor steal, nor interrupt time. It is taken from the idle time,
    which a tickless kernel accounts exactly, not from user and system time, which it samples at
    its timer ticks and so misses for processes that run in short bursts between them (a loop
    waking at 10 Hz). Interrupt time (irq, softirq) is apart: loopback delivery of our own flood
    runs there, charged to no process of ours, and would otherwise pass for background load.
    """
    now = time.monotonic()
    with open("/proc/stat", encoding="ascii") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    _, _, _, idle, iowait, irq, softirq, steal = (values + [0] * 8)[:8]
    tick = float(os.sysconf("SC_CLK_TCK"))
    everything = (os.cpu_count() or 1) * now
    busy = everything - (idle + iowait + steal + irq + softirq) / tick
    return busy, steal / tick, everything, (irq + softirq) / tick


def own_cpu() -> float:
    """CPU seconds of this orchestrator: background outside our processes must not count it."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def environment() -> dict[str, Any]:
    import can
    import cantools

    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    git = "unknown"
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.strip()
        git = head + ("+dirty" if dirty else "")
    import sysconfig

    config_args = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    mem_kb = 0
    with contextlib.suppress(OSError, StopIteration):
        mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal:"))
    return {
        "cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "python_build": "PGO+LTO" if "--enable-optimizations" in config_args else "no PGO/LTO",
        "python_can": can.__version__, "cantools": cantools.__version__,
        "git": git, "loadavg_start": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "kernel_can": Path("/proc/net/can").exists(),
    }
