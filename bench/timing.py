"""The timing phases (``quiet``, ``flood``, ``hog``, ``hog-rt``): closed loops side by side, each on
its own port, recorded by one receiver, in rounds.

Side by side and in rounds because the machine changes speed from one minute to the next: every
loop meets the same minutes, and a slow spell falls on every phase rather than on one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import analysis, repeats
from bench.machine import cpu_seconds, kernel_workers, own_cpu, peak_rss_mb, system_busy
from bench.processes import (
    FIFO_PRIORITY,
    Processes,
    actor_command,
    ecu_sim_command,
    fifo_allowed,
    sleep_checking,
)
from bench.receiver import Receiver
from bench.roles import PERIODIC_ID
from bench.session import APP_ID, PERIOD_S, SPEED_ID, Session


def measure(session: Session) -> dict[str, Any]:
    """quiet, flood, hog, hog-rt in rounds, so the machine's slow minutes fall on every phase."""
    chosen = []
    for phase, load in (("quiet", None), ("flood", "flood"), ("hog", "hog"), ("hog-rt", "hog")):
        if phase not in session.o.phases:
            continue
        if phase.endswith("-rt") and not fifo_allowed():
            session.say(f"{phase}: skipped, this user may not use SCHED_FIFO (run as root to include it)")
            continue
        chosen.append((phase, load))
    reps: dict[str, list[dict[str, Any]]] = {phase: [] for phase, _ in chosen}
    for rep in range(session.o.repeats):
        for phase, load in chosen:
            realtime = phase.endswith("-rt")
            seconds = session.o.quiet_s if phase == "quiet" else session.o.load_s
            session.say(f"{phase} {rep + 1}/{session.o.repeats}: {seconds:.0f} s of closed loops side by side"
                        + (f" (senders SCHED_FIFO {FIFO_PRIORITY})" if realtime else ""))
            reps[phase].append(_repetition(session, phase, seconds, load, realtime, rep))
    return {phase: {"repetitions": done, **phase_summary(done)} for phase, done in reps.items()}


def _repetition(session: Session, phase: str, seconds: float, load: str | None, realtime: bool = False,
                rep: int = 0) -> dict[str, Any]:
    """One repetition of a timing phase; its figures, conditions and ratios to send_periodic."""
    a, b, c, d = session.port(), session.port(), session.port(), session.port()
    ecu_cmd = ecu_sim_command()
    probe = session.raw / f"{phase}-{rep}-probe.json"
    with Processes(session.logs, f"{phase}-{rep}") as procs:
        receiver = Receiver(procs, [a, b, c, d] if session.o.probe else [a, b, c],
                            session.raw / f"{phase}-{rep}.json")
        rt = {"realtime": realtime}
        groups: dict[str, list[tuple[str, list[str]]]] = {
            "ecu-sim": [("ecu", [*ecu_cmd, "--bus-kwargs", f"port={a}"]),
                        ("ccm", [*ecu_cmd, "ccm", "--bus-kwargs", f"port={a}"])],
            "send_periodic": [("periodic", actor_command("periodic", "--port", b, "--period", PERIOD_S))],
            "testbed": [("testbed", actor_command("testbed", "--port", c, "--period", PERIOD_S)),
                        ("testbed-ccm", [*ecu_cmd, "ccm", "--bus-kwargs", f"port={c}"])],
        }
        if session.o.probe:  # a fourth loop, the ECU instrumented: where its late ticks come from
            groups["probed"] = [("ecu-probed", [*ecu_cmd, "--bus-kwargs", f"port={d}",
                                                "--tick-probe", str(probe)]),
                                ("ccm-probed", [*ecu_cmd, "ccm", "--bus-kwargs", f"port={d}"])]
        if phase == "quiet":  # the price of one and of two wake-ups a period, and of the
            # ECU's work with no structure around it, in the same minutes
            groups["sleepers"] = [(f"sleeper-{n}", actor_command("sleeper", "--wakes", n, "--period",
                                                                 PERIOD_S)) for n in (1, 2)]
            e = session.port()
            groups["floor"] = [("floor", actor_command("floor", "--port", e, "--period", PERIOD_S)),
                               ("floor-ccm", [*ecu_cmd, "ccm", "--bus-kwargs", f"port={e}"])]
        order = repeats.start_order(list(groups), rep)
        for group in order:
            for name, argv in groups[group]:
                procs.spawn(name, argv, **rt)
        streams = [(0, SPEED_ID), (0, APP_ID), (1, PERIODIC_ID), (2, SPEED_ID), (2, APP_ID),
                   *([(3, SPEED_ID)] if session.o.probe else [])]
        if not receiver.wait_for(streams, 60.0):
            raise RuntimeError(f"{phase}: not every sender started within 60 s (logs: {session.logs})")
        started = {name: receiver.first[stream] - procs.get(name).spawned_at
                   for name, stream in (("ecu", (0, SPEED_ID)), ("ccm", (0, APP_ID)))}
        load_started = time.time()
        if load == "flood":
            procs.spawn("flood", actor_command("flood", "--ports", a, b, c, d, "--rate", 2000))
        elif load == "hog":
            for core in range(os.cpu_count() or 1):
                procs.spawn(f"hog{core}", actor_command("hog"))
        sleep_checking(2.0, procs)
        watched = [p for p in procs.procs if p.name != "receiver"]
        spawned = {p.name: p.spawned_at for p in watched}
        t_a = time.time()
        cpu_a = {p.name: cpu_seconds(p.popen.pid) for p in watched}
        workers = kernel_workers()
        ear_a = cpu_seconds(receiver.proc.popen.pid) + own_cpu() + sum(map(cpu_seconds, workers))
        sys_a = system_busy()
        sleep_checking(seconds, procs)
        t_b = time.time()
        cpu_b = {p.name: cpu_seconds(p.popen.pid) for p in watched}
        ear_b = cpu_seconds(receiver.proc.popen.pid) + own_cpu() + sum(map(cpu_seconds, workers))
        sys_b = system_busy()
        rss = {p.name: peak_rss_mb(p.popen.pid) for p in watched}
        procs.stop([p.name for p in watched])
        procs.stop(["receiver"])
        recorded = receiver.frames()
    ticks = (t_b - t_a) / PERIOD_S
    cpu = {name: {"cpu_s": cpu_b[name] - cpu_a[name],
                  "us_per_tick": 1e6 * (cpu_b[name] - cpu_a[name]) / ticks,
                  "pct_of_core": 100.0 * (cpu_b[name] - cpu_a[name]) / (t_b - t_a),
                  # the whole process so far, start-up included, over the periods since its start
                  "us_per_tick_with_startup": 1e6 * cpu_b[name] * PERIOD_S / (t_b - spawned[name]),
                  "peak_rss_mb": rss[name]} for name in cpu_a}
    ncpu = os.cpu_count() or 1
    d_busy, d_steal, d_all, d_irq = (sys_b[i] - sys_a[i] for i in range(4))
    # ours: every process of the phase, the load it adds, the receiver, this orchestrator and
    # the kernel's receive workers (ksoftirqd), which only a flood keeps busy
    ours = (sum(v["cpu_s"] for v in cpu.values()) + ear_b - ear_a) / (t_b - t_a)
    busy_cores = ncpu * d_busy / d_all if d_all else math.nan
    conditions = {"busy_cores": busy_cores, "ours_cores": ours,
                  "background_cores": busy_cores - ours,
                  "steal_cores": ncpu * d_steal / d_all if d_all else math.nan,
                  "interrupt_cores": ncpu * d_irq / d_all if d_all else math.nan,
                  "loadavg": os.getloadavg()}
    timings = wire_timings(recorded["frames"], t_a, t_b)
    session.timings[phase] = timings
    return {
        "rep": rep,
        "start_order": order,
        "seconds": t_b - t_a,
        "window": [t_a, t_b],
        "timing": {name: t.brief() for name, t in timings.items()},
        "ratios": ratios(timings, rep, busy_cores - ours),
        "cpu": cpu,
        "startup_in_phase_s": started,
        "flood_frames_per_s": ([n / (t_b - load_started) for n in recorded["flood"]]
                               if load == "flood" else None),
        "conditions": conditions,
        "probe": _read_json(probe) if session.o.probe else None,
        "ecu_sim_summary": {name: _last_summary(session.logs / f"{phase}-{rep}-{name}.log")
                            for name in ("ecu", "ccm", "testbed-ccm")},
    }


def wire_timings(frames: Sequence[Sequence[Any]], t_a: float, t_b: float) -> dict[str, analysis.StreamTiming]:
    """Period error and drift of each sender of a timing phase, from the receiver's recording."""

    def times(bus: int, ident: int) -> list[float]:
        return [float(f[0]) for f in frames if t_a <= f[0] <= t_b and f[1] == bus and f[2] == ident]

    return {
        "ecu-sim (ECU)": analysis.stream_timing(times(0, SPEED_ID), PERIOD_S),
        "ecu-sim ccm": analysis.stream_timing(times(0, APP_ID), PERIOD_S),
        "send_periodic": analysis.stream_timing(times(1, PERIODIC_ID), PERIOD_S),
        "testbed loop": analysis.stream_timing(times(2, SPEED_ID), PERIOD_S, schedule=False),
        **({PROBED: analysis.stream_timing(times(3, SPEED_ID), PERIOD_S)}
           if any(f[1] == 3 for f in frames) else {}),
    }


#: the instrumented ECU's stream, beside the plain one
PROBED = "ecu-sim probed"


def ratios(timings: dict[str, analysis.StreamTiming], rep: int, background: float) -> dict[str, Any]:
    """ecu-sim's p99 and max over send_periodic's in this repetition, with bootstrap intervals."""
    counted = repeats.repetition(rep, timings["ecu-sim (ECU)"].errors_ms,
                                 timings["send_periodic"].errors_ms, background)
    return {"noisy": counted.noisy, **{name: dataclasses.asdict(iv) for name, iv in counted.ratios.items()}}


def phase_summary(reps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A phase over its repetitions: the verdict on the ratios, and the median CPU per tick."""
    counted = [repeats.Repetition(r["rep"], r["conditions"]["background_cores"],
                                  {name: repeats.Interval(**r["ratios"][name])
                                   for name in repeats.STATISTICS})
               for r in reps]
    cpu = {name: analysis.percentile([r["cpu"][name]["us_per_tick"] for r in reps], 50)
           for name in reps[0]["cpu"]}
    return {"verdict": dataclasses.asdict(repeats.verdict(counted)), "median_us_per_tick": cpu}


def _read_json(path: Path) -> Any:
    """A JSON file a child wrote when it stopped, or None when it wrote none."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _last_summary(log: Path) -> str | None:
    """ecu-sim's own closing line ("stopped after N ticks: L late, S skipped, ...")."""
    with contextlib.suppress(OSError):
        for line in reversed(log.read_text(errors="replace").splitlines()):
            if "stopped after" in line:
                return line.split("ecu_sim:", 1)[-1].strip()
    return None
