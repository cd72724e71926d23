"""How many processor cores this process may run on: what a pool sizes itself by, and what tells
whether a busy wait would take the only core from the process it waits for."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores the scheduler lets this process use (its affinity), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
