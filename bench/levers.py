"""The ``levers`` phase: ecu-sim with one lever on beside ecu-sim with none, in the same minutes.

Each variant is an ECU + CCM pair on its own udp_multicast port, all pairs and python-can's
``send_periodic`` running at once and recorded by one receiver, so every variant meets the same
neighbours. The phase is repeated (start order rotated), quiet and then under a flood, and each
variant's p99 and max period error is read as a ratio to the plain pair's in the same
repetition: below 1 the lever helped. Its CPU per tick is the price.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from bench import analysis
from bench.machine import cpu_seconds, kernel_workers, system_busy
from bench.processes import Processes, actor_command, ecu_sim_command, fifo_allowed, sleep_checking
from bench.receiver import Receiver
from bench.roles import PERIODIC_ID
from bench.session import PERIOD_S, SPEED_ID, Session

#: variant name -> the options it adds to both ``ecu-sim`` and ``ecu-sim ccm``
VARIANTS: dict[str, list[str]] = {
    "none (defaults)": [],
    "timer slack 50 us (Linux default)": ["--timer-slack-us", "50"],
    "gc between ticks": ["--gc", "between-ticks"],
    "no spin (wake at the deadline)": ["--spin-us", "0"],
    "spin up to 500 us": ["--spin-us", "500"],
    "spin up to 2 ms": ["--spin-us", "2000"],
    "cpu affinity 1": ["--cpu-affinity", "1"],
    "no drain after the deadline": ["--no-drain-at-deadline"],
    "SCHED_FIFO 10": ["--realtime-priority", "10"],
    "mlockall": ["--lock-memory"],
}
BASE = "none (defaults)"
CONDITIONS = (("quiet", None), ("flood", "flood"))


def rotated(names: Sequence[str], rep: int) -> list[str]:
    """Start order of repetition ``rep``: shifted by one each time, so no variant always starts first."""
    shift = rep % len(names)
    return [*names[shift:], *names[:shift]]


def measure(session: Session) -> dict[str, Any]:
    """Every variant side by side, ``session.o.repeats`` times in each condition."""
    variants = {k: v for k, v in VARIANTS.items() if "--realtime-priority" not in v or fifo_allowed()}
    seconds = max(3.0, min(session.o.quiet_s, 20.0))
    out: dict[str, Any] = {"variants": {k: " ".join(v) for k, v in variants.items()}, "seconds": seconds}
    for condition, load in CONDITIONS:
        reps = []
        for rep in range(session.o.repeats):
            session.say(f"levers, {condition} {rep + 1}/{session.o.repeats}: {len(variants)} variants "
                        f"and send_periodic, {seconds:.0f} s")
            reps.append(_once(session, variants, condition, load, seconds, rep))
        out[condition] = {"repetitions": reps, "summary": summarize(reps, list(variants))}
    return out


def _once(session: Session, variants: dict[str, list[str]], condition: str, load: str | None,
          seconds: float, rep: int) -> dict[str, Any]:
    names = list(variants)
    ports = {name: session.port() for name in names}
    periodic_port = session.port()
    ecu_cmd = ecu_sim_command()
    tag = f"levers-{condition}-{rep}"
    with Processes(session.logs, tag) as procs:
        receiver = Receiver(procs, [*ports.values(), periodic_port], session.raw / f"{tag}.json")
        procs.spawn("periodic", actor_command("periodic", "--port", periodic_port, "--period", PERIOD_S))
        for name in rotated(names, rep):
            extra, index = variants[name], names.index(name)
            procs.spawn(f"ecu{index}", [*ecu_cmd, "--bus-kwargs", f"port={ports[name]}", *extra])
            procs.spawn(f"ccm{index}", [*ecu_cmd, "ccm", "--bus-kwargs", f"port={ports[name]}", *extra])
        streams = [(i, SPEED_ID) for i in range(len(names))] + [(len(names), PERIODIC_ID)]
        if not receiver.wait_for(streams, 60.0):
            raise RuntimeError(f"{tag}: not every sender started within 60 s (logs: {session.logs})")
        if load == "flood":
            procs.spawn("flood", actor_command("flood", "--ports", *ports.values(), periodic_port,
                                               "--rate", 2000))
        sleep_checking(2.0, procs)
        ecus = {name: procs.get(f"ecu{names.index(name)}") for name in names}
        t_a, sys_a = time.time(), system_busy()
        cpu_a = {name: cpu_seconds(p.popen.pid) for name, p in ecus.items()}
        workers = kernel_workers()
        everyone_a = sum(cpu_seconds(p.popen.pid) for p in procs.procs) + sum(map(cpu_seconds, workers))
        sleep_checking(seconds, procs)
        t_b, sys_b = time.time(), system_busy()
        cpu_b = {name: cpu_seconds(p.popen.pid) for name, p in ecus.items()}
        everyone_b = sum(cpu_seconds(p.popen.pid) for p in procs.procs) + sum(map(cpu_seconds, workers))
        procs.stop([p.name for p in procs.procs if p.name != "receiver"])
        procs.stop(["receiver"])
        frames = receiver.frames()["frames"]
    d_busy, _, d_all, _ = (sys_b[i] - sys_a[i] for i in range(4))
    busy = (os.cpu_count() or 1) * d_busy / d_all if d_all else float("nan")
    ticks = (t_b - t_a) / PERIOD_S

    def timing(bus: int, ident: int) -> analysis.StreamTiming:
        return analysis.stream_timing([float(f[0]) for f in frames
                                       if t_a <= f[0] <= t_b and f[1] == bus and f[2] == ident], PERIOD_S)

    result = {name: {**timing(i, SPEED_ID).period_error.__dict__,
                     "us_per_tick": 1e6 * (cpu_b[name] - cpu_a[name]) / ticks}
              for i, name in enumerate(names)}
    result["send_periodic"] = dict(timing(len(names), PERIODIC_ID).period_error.__dict__)
    return {"rep": rep, "started_first": rotated(names, rep)[0], "senders": result,
            "background_cores": busy - (everyone_b - everyone_a) / (t_b - t_a)}


def summarize(reps: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """Per variant: median p99 and max, median ratio to the plain pair in the same repetition, CPU."""
    out: dict[str, Any] = {}
    for name in [*names, "send_periodic"]:
        rows = [r["senders"][name] for r in reps]
        base = [r["senders"][BASE] for r in reps]
        out[name] = {
            "p99_ms": analysis.percentile([x["p99_ms"] for x in rows], 50),
            "max_ms": analysis.percentile([x["max_ms"] for x in rows], 50),
            "p99_ratio_to_none": analysis.percentile(
                [analysis.ratio(x["p99_ms"], b["p99_ms"]) for x, b in zip(rows, base, strict=True)], 50),
            "max_ratio_to_none": analysis.percentile(
                [analysis.ratio(x["max_ms"], b["max_ms"]) for x, b in zip(rows, base, strict=True)], 50),
            "us_per_tick": analysis.percentile([x.get("us_per_tick", float("nan")) for x in rows], 50),
        }
    return out


def tables(result: dict[str, Any]) -> list[str]:
    """Markdown: one row per variant and condition."""
    lines = ["## Levers side by side (ECU, medians over the repetitions)", "",
             "| condition | variant | p99 (ms) | max (ms) | p99 ratio to none | max ratio to none | "
             "CPU per tick (us) |", "|---|---|---|---|---|---|---|"]
    for condition, _ in CONDITIONS:
        if condition not in result:
            continue
        background = [r["background_cores"] for r in result[condition]["repetitions"]]
        for name, s in result[condition]["summary"].items():
            lines.append(f"| {condition} | {name} | {s['p99_ms']:.3f} | {s['max_ms']:.3f} | "
                         f"{s['p99_ratio_to_none']:.2f} | {s['max_ratio_to_none']:.2f} | "
                         f"{s['us_per_tick']:.0f} |")
        lines.append(f"| {condition} | background cores per repetition | "
                     + ", ".join(f"{b:.2f}" for b in background) + " | | | | |")
    return [*lines, ""]
