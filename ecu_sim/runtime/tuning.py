"""Levers on how the operating system and the interpreter treat the loop's thread, all opt-in.

Each is a setting of ``[run]`` (and an option of ``run`` and ``ccm``), measured side by side in
docs/performance.md, where it says which ones pay on which machine:

- ``cpu_affinity``: the cores the process may run on (``sched_setaffinity``).
- ``realtime_priority``: ``SCHED_FIFO`` at this priority, so ordinary processes cannot delay a
  tick; needs CAP_SYS_NICE (root, a unit's ``CPUSchedulingPolicy=fifo``, or ``LimitRTPRIO=``).
- ``lock_memory``: ``mlockall``, so no page of the process is paged out and faulted back in the
  middle of a tick; needs CAP_IPC_LOCK or a ``LimitMEMLOCK=`` large enough.
- ``drain_at_deadline = no``: frames that arrive in the last hundredth of a period wait for the
  next tick instead of being received between the deadline and the send.
- ``gc = between-ticks``: the heap of the start-up is frozen (``gc.freeze``), automatic
  collection is off, and the collection that would have run is run right after a tick's send,
  so a collection never falls between a deadline and its frame.

A value that cannot work (a core this machine does not have) is a ConfigError; a permission the
process lacks is a warning saying what gives it, and the run goes on without that lever.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ecu_sim.errors import ConfigError
from ecu_sim.runtime.cores import allowed_cores

log = logging.getLogger("ecu_sim")

#: what ``[run] gc`` accepts: Python's own automatic collection, or collection between ticks
GC_MODES = ("default", "between-ticks")
#: ``SCHED_FIFO`` priorities Linux accepts
PRIORITY_RANGE = (1, 99)
#: mlockall(2) flags: what is mapped now, and what will be
_MCL_CURRENT, _MCL_FUTURE = 1, 2


def parse_cpus(text: str) -> frozenset[int]:
    """``"1"``, ``"0,1"``, ``"0-3"``: a set of core numbers; ValueError says what is wrong."""
    cores: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        low, dash, high = part.partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise ValueError(f"{part!r} is not a core number or a range such as 0-1") from None
        if first < 0 or last < first:
            raise ValueError(f"{part!r} is not a range of core numbers (low-high, from 0)")
        cores.update(range(first, last + 1))
    if not cores:
        raise ValueError("no core given; e.g. 1, or 0,1, or 0-1")
    return frozenset(cores)


def apply_affinity(cores: frozenset[int], origin: str,
                   setaffinity: Callable[[int, frozenset[int]], None] | None = None) -> str | None:
    """Keep the process on ``cores``; a core it may not use is a mistake in the settings, a call
    it may not make (a unit's ``SystemCallFilter=~@resources``) a warning naming ``CPUAffinity=``."""
    call = setaffinity or getattr(os, "sched_setaffinity", None)
    if call is None:
        raise ConfigError(f"cpu_affinity ({origin}) needs Linux; leave it out on this system")
    try:
        call(0, cores)
    except PermissionError:
        return (f"cpu_affinity ({origin}): this process may not choose its cores (a system call "
                "filter); give the systemd unit CPUAffinity= instead; running on every core")
    except OSError as exc:
        allowed = allowed_cores()
        raise ConfigError(f"cpu_affinity {','.join(map(str, sorted(cores)))} ({origin}) cannot be "
                          f"used: {exc.strerror}; this process may run on cores "
                          f"{','.join(map(str, allowed))}") from None
    return None


def apply_priority(priority: int,
                   setscheduler: Callable[[int, int, object], None] | None = None) -> str | None:
    """``SCHED_FIFO`` at ``priority``; a warning (not an error) when the process may not."""
    call = setscheduler or getattr(os, "sched_setscheduler", None)
    if call is None or not hasattr(os, "SCHED_FIFO"):
        return "realtime_priority needs Linux; running at normal priority"
    try:
        call(0, os.SCHED_FIFO, os.sched_param(priority))
    except PermissionError:
        return (f"realtime_priority {priority}: this process may not use SCHED_FIFO (it needs "
                "CAP_SYS_NICE); run it as a systemd unit with CPUSchedulingPolicy=fifo and "
                f"CPUSchedulingPriority={priority}, or give the user LimitRTPRIO / an rtprio limit "
                "in /etc/security/limits.conf; running at normal priority")
    return None


@contextmanager
def restored_scheduling(unlock_memory: bool) -> Iterator[None]:
    """The process's cores and scheduling policy as they were on entry, again on exit, whatever
    the levers did in between; its memory unlocked again when a lever locked it."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    cores = getaffinity(0) if getaffinity is not None else None
    policy = os.sched_getscheduler(0) if hasattr(os, "sched_getscheduler") else None
    param = os.sched_getparam(0) if policy is not None else None
    try:
        yield
    finally:
        # each on its own: a core gone from the cpuset must not keep the worker at SCHED_FIFO
        if cores is not None:
            _restore("cores", lambda: os.sched_setaffinity(0, cores))
        if policy is not None and param is not None:
            _restore("scheduling policy", lambda: os.sched_setscheduler(0, policy, param))
        if unlock_memory and sys.platform.startswith("linux"):
            import ctypes

            ctypes.CDLL(None).munlockall()


def _restore(what: str, call: Callable[[], None]) -> None:
    try:
        call()
    except OSError as exc:
        log.warning("could not restore the process's %s after the run: %s", what, exc.strerror)


def apply_memory_lock(mlockall: Callable[[int], int] | None = None) -> str | None:
    """Lock every page of the process in memory; a warning when the limit does not allow it."""
    if mlockall is None:
        if not sys.platform.startswith("linux"):
            return "lock_memory needs Linux; memory stays pageable"
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)

        def mlockall(flags: int) -> int:
            return 0 if libc.mlockall(flags) == 0 else ctypes.get_errno()
    error = mlockall(_MCL_CURRENT | _MCL_FUTURE)
    if error:
        return (f"lock_memory: mlockall failed ({os.strerror(error)}); give the unit "
                "LimitMEMLOCK=infinity (or CAP_IPC_LOCK), or raise ulimit -l; memory stays pageable")
    return None


class DrainBeforeDeadline:
    """A node whose frames are taken only while the clock waits, never after the deadline.

    The loop drains each node right before its tick, which in real time means after the
    deadline: frames that arrived in the last hundredth of a period (under a flood, a few every
    tick) are received and decoded between the deadline and the send. Wrapped, a node skips that
    drain; those frames wait for the clock's drain before the next deadline, one period later.
    """

    def __init__(self, node: Any, clock: Any) -> None:
        self._node, self._clock = node, clock

    def poll(self, timeout_s: float) -> None:
        self._node.poll(timeout_s)

    def prepare(self) -> None:
        self._node.prepare()

    def drain(self) -> None:
        if self._clock.waiting:
            self._node.drain()

    def tick(self, deadline: float, transmit: bool) -> None:
        self._node.tick(deadline, transmit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._node, name)


class BetweenTicks:
    """A tick observer that runs the collection Python would have run, after the tick's send.

    ``start`` freezes what the start-up built (it lives for the whole run, so scanning it again
    and again finds nothing) and turns automatic collection off; each tick then checks the same
    counters and thresholds the automatic collector checks, and collects the generation it would
    have, at a moment when no deadline is waiting.
    """

    def __init__(self, get_count: Callable[[], tuple[int, int, int]] = gc.get_count,
                 collect: Callable[[int], int] = gc.collect,
                 thresholds: tuple[int, int, int] | None = None) -> None:
        self._count, self._collect = get_count, collect
        self._t0, self._t1, self._t2 = thresholds or gc.get_threshold()
        self.collections = 0

    def start(self) -> None:
        gc.collect()
        gc.freeze()
        gc.disable()

    def stop(self) -> None:
        gc.enable()
        gc.unfreeze()

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        c0, c1, c2 = self._count()
        if c0 < self._t0:
            return
        generation = 0 if c1 < self._t1 else 1 if c2 < self._t2 else 2
        self._collect(generation)
        self.collections += 1
