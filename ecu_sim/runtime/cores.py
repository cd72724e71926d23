"""Which processor cores this process may run on: what a pool sizes itself by, what tells whether
a busy wait would take the only core from the process it waits for, and what an affinity
setting must choose from."""

from __future__ import annotations

import os


def allowed_cores() -> list[int]:
    """The cores the scheduler lets this process use (its affinity); empty where it cannot say."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    return [] if getaffinity is None else sorted(getaffinity(0))


def usable_cores() -> int:
    """How many cores this process may use: its affinity, not the machine's count."""
    return len(allowed_cores()) or os.cpu_count() or 1
