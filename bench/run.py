"""Orchestration of a benchmark run: the phases, the processes, the measurements.

Phases (see docs/performance.md for the method and how to read the results):

1. ``startup``: ``ecu-sim`` and ``ecu-sim ccm`` started one at a time, process start to their first
   frame at a listener; the import-time breakdown; the steps inside one start.
2. ``quiet``, ``flood``, ``hog``: three closed loops side by side, each on its own udp_multicast
   port, recorded by one receiver process: (A) ``ecu-sim`` + ``ecu-sim ccm``; (B) python-can's
   ``send_periodic``; (C) the testbed's loop style + ``ecu-sim ccm``. ``flood`` adds ~2000
   unrelated frames/s on every port, ``hog`` a busy loop on every core.
3. ``latency``: APP steps at random moments to ``ecu-sim`` (port A) and to the testbed loop
   (port C); the time to the first speed frame that reflects each step.
4. ``throughput``: virtual-time ticks per second of ``ecu-sim simulate`` and of ECU + CCM on
   the in-process link and on python-can's ``virtual`` bus.
5. ``cosim``: ``ecu-sim cosim`` stepped over loopback UDP with one and a hundred ticks a request,
   beside the same ECU in process (bench/cosim.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import random
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import analysis, repeats
from bench.machine import cpu_seconds, environment, kernel_workers, own_cpu, peak_rss_mb, system_busy
from bench.processes import (
    FIFO_PRIORITY,
    REPO,
    Processes,
    actor_command,
    child_env,
    ecu_sim_command,
    fifo_allowed,
    sleep_checking,
)
from bench.receiver import Receiver
from bench.roles import GROUP, PERIODIC_ID
from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus

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





class Bench:
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

    # -- start-up -----------------------------------------------------------------------------------

    def startup(self) -> None:
        port = self.port()
        runs: dict[str, list[float]] = {"ecu-sim": [], "ecu-sim ccm": []}
        bare: list[float] = []
        for _ in range(self.o.startup_runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=child_env(), check=True)
            bare.append(time.perf_counter() - t0)
        # one warm-up start writes the bytecode cache, as an installation would have
        subprocess.run([*ecu_sim_command(), "--help"], env=child_env(), capture_output=True, check=True)
        listener = HostLocalUdpMulticastBus(channel=GROUP, port=port)
        try:
            with Processes(self.logs, "startup") as procs:
                for i in range(self.o.startup_runs):
                    for command, ident in (("ecu-sim", SPEED_ID), ("ecu-sim ccm", APP_ID)):
                        extra = ["ccm"] if command.endswith("ccm") else []
                        name = f"{command.replace(' ', '-')}-{i}"
                        proc = procs.spawn(name, [*ecu_sim_command(), *extra, "--bus-kwargs",
                                                  f"port={port}", "--log-level", "warning"])
                        runs[command].append(self._first_frame(listener, ident, proc.spawned_at) -
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
        self.result["startup"] = {
            "first_frame_s": {k: {"runs": [round(v, 4) for v in vs], "median": analysis.percentile(vs, 50),
                                  "max": max(vs)} for k, vs in runs.items()},
            "bare_interpreter_s": analysis.percentile(bare, 50),
            "imports": dataclasses.asdict(analysis.import_times(imports.stderr.splitlines())),
            "steps_ms": json.loads(steps.stdout),
        }

    @staticmethod
    def _first_frame(listener: Any, ident: int, after: float, timeout: float = 20.0) -> float:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            msg = listener.recv(left)
            if msg is not None and msg.arbitration_id == ident and msg.timestamp >= after:
                return float(msg.timestamp)
        return math.nan

    # -- timing on the wire -------------------------------------------------------------------------

    def wire(self, phase: str, seconds: float, load: str | None, realtime: bool = False,
             rep: int = 0) -> dict[str, Any]:
        """One repetition of a timing phase; its figures, conditions and ratios to send_periodic."""
        a, b, c, d = self.port(), self.port(), self.port(), self.port()
        ecu_cmd = ecu_sim_command()
        probe = self.raw / f"{phase}-{rep}-probe.json"
        with Processes(self.logs, f"{phase}-{rep}") as procs:
            receiver = Receiver(procs, [a, b, c, d] if self.o.probe else [a, b, c],
                                self.raw / f"{phase}-{rep}.json")
            rt = {"realtime": realtime}
            groups: dict[str, list[tuple[str, list[str]]]] = {
                "ecu-sim": [("ecu", [*ecu_cmd, "--bus-kwargs", f"port={a}"]),
                            ("ccm", [*ecu_cmd, "ccm", "--bus-kwargs", f"port={a}"])],
                "send_periodic": [("periodic", actor_command("periodic", "--port", b, "--period", PERIOD_S))],
                "testbed": [("testbed", actor_command("testbed", "--port", c, "--period", PERIOD_S)),
                            ("testbed-ccm", [*ecu_cmd, "ccm", "--bus-kwargs", f"port={c}"])],
            }
            if self.o.probe:  # a fourth loop, the ECU instrumented: where its late ticks come from
                groups["probed"] = [("ecu-probed", [*ecu_cmd, "--bus-kwargs", f"port={d}",
                                                    "--tick-probe", str(probe)]),
                                    ("ccm-probed", [*ecu_cmd, "ccm", "--bus-kwargs", f"port={d}"])]
            if phase == "quiet":  # the price of one and of two wake-ups a period, and of the
                # ECU's work with no structure around it, in the same minutes
                groups["sleepers"] = [(f"sleeper-{n}", actor_command("sleeper", "--wakes", n, "--period",
                                                                     PERIOD_S)) for n in (1, 2)]
                e = self.port()
                groups["floor"] = [("floor", actor_command("floor", "--port", e, "--period", PERIOD_S)),
                                   ("floor-ccm", [*ecu_cmd, "ccm", "--bus-kwargs", f"port={e}"])]
            order = repeats.start_order(list(groups), rep)
            for group in order:
                for name, argv in groups[group]:
                    procs.spawn(name, argv, **rt)
            streams = [(0, SPEED_ID), (0, APP_ID), (1, PERIODIC_ID), (2, SPEED_ID), (2, APP_ID),
                       *([(3, SPEED_ID)] if self.o.probe else [])]
            if not receiver.wait_for(streams, 60.0):
                raise RuntimeError(f"{phase}: not every sender started within 60 s (logs: {self.logs})")
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
        self.timings[phase] = timings
        return {
            "rep": rep,
            "start_order": order,
            "seconds": t_b - t_a,
            "window": [t_a, t_b],
            "timing": {name: t.brief() for name, t in timings.items()},
            "ratios": _ratios(timings, rep, busy_cores - ours),
            "cpu": cpu,
            "startup_in_phase_s": started,
            "flood_frames_per_s": ([n / (t_b - load_started) for n in recorded["flood"]]
                                   if load == "flood" else None),
            "conditions": conditions,
            "probe": _read_json(probe) if self.o.probe else None,
            "ecu_sim_summary": {name: _last_summary(self.logs / f"{phase}-{rep}-{name}.log")
                                for name in ("ecu", "ccm", "testbed-ccm")},
        }

    def latency(self, seconds: float) -> None:
        a, c = self.port(), self.port()
        ecu_cmd = ecu_sim_command()
        with Processes(self.logs, "latency") as procs:
            receiver = Receiver(procs, [a, c], self.raw / "latency.json")
            procs.spawn("ecu", [*ecu_cmd, "--bus-kwargs", f"port={a}", "--grade", "0",
                                "--initial-speed", "60"])
            procs.spawn("testbed", actor_command("testbed", "--port", c, "--initial-speed", 60))
            if not receiver.wait_for([(0, SPEED_ID), (1, SPEED_ID)], 60.0):
                raise RuntimeError(f"latency: the senders did not start within 60 s (logs: {self.logs})")
            procs.spawn("stimulus", actor_command("stimulus", "--ports", a, c))
            sleep_checking(seconds, procs)
            procs.stop(["stimulus", "ecu", "testbed"])
            procs.stop(["receiver"])
            recorded = receiver.frames()
        self.latencies = latencies(recorded["frames"])
        self.result["latency"] = {name: lat.brief() for name, lat in self.latencies.items()}

    # -- virtual time -------------------------------------------------------------------------------

    def throughput(self) -> None:
        cli = self._simulate_cli()
        class6 = sorted(r["reported_ticks_per_s"] for r in self._simulate_cli("--vehicle", "class6",
                                                                             "--route", "appendix-d"))
        links = {}
        for link in ("direct", "virtual"):
            done = subprocess.run(actor_command("throughput", "--link", link, "--seconds", 300,
                                                "--repeats", 2 + self.o.throughput_repeats),
                                  cwd=REPO, env=child_env(), capture_output=True, text=True, check=True)
            links[link] = json.loads(done.stdout)
        reported = sorted(r["reported_ticks_per_s"] for r in cli)
        self.result["throughput"] = {"simulate_cli": cli, "simulate_cli_best": reported[-1],
                                     "simulate_cli_median": reported[len(reported) // 2],
                                     "class6_cli_best": class6[-1],
                                     "class6_cli_median": class6[len(class6) // 2],
                                     "in_process": links, "loadavg": os.getloadavg()}

    def _simulate_cli(self, *extra: str) -> list[dict[str, float]]:
        """``ecu-sim simulate --duration 3600`` (with ``extra``), its own ticks/s and its CPU time."""
        cli: list[dict[str, float]] = []
        for _ in range(self.o.throughput_repeats):
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

    def timing_phases(self) -> None:
        """quiet, flood, hog, hog-rt in rounds, so the machine's slow minutes fall on every phase."""
        chosen = []
        for phase, load in (("quiet", None), ("flood", "flood"), ("hog", "hog"), ("hog-rt", "hog")):
            if phase not in self.o.phases:
                continue
            if phase.endswith("-rt") and not fifo_allowed():
                self.say(f"{phase}: skipped, this user may not use SCHED_FIFO (run as root to include it)")
                continue
            chosen.append((phase, load))
        reps: dict[str, list[dict[str, Any]]] = {phase: [] for phase, _ in chosen}
        for rep in range(self.o.repeats):
            for phase, load in chosen:
                realtime = phase.endswith("-rt")
                seconds = self.o.quiet_s if phase == "quiet" else self.o.load_s
                self.say(f"{phase} {rep + 1}/{self.o.repeats}: {seconds:.0f} s of closed loops side by side"
                         + (f" (senders SCHED_FIFO {FIFO_PRIORITY})" if realtime else ""))
                reps[phase].append(self.wire(phase, seconds, load, realtime, rep))
        for phase, done in reps.items():
            self.result[phase] = {"repetitions": done, **phase_summary(done)}

    # -- all ----------------------------------------------------------------------------------------

    def run(self) -> Path:
        self.result["environment"] = environment()
        phases = self.o.phases
        self.say(f"writing to {self.dir}")
        if "startup" in phases:
            self.say(f"start-up: {self.o.startup_runs} starts each of ecu-sim and ecu-sim ccm")
            self.startup()
        self.timing_phases()
        if "levers" in phases:
            from bench import levers

            self.say("levers: ecu-sim with each lever on, side by side with it off and with send_periodic")
            self.result["levers"] = levers.measure(self)
        if "latency" in phases:
            self.say(f"latency: {self.o.latency_s:.0f} s of APP steps")
            self.latency(self.o.latency_s)
        if "throughput" in phases:
            self.say("throughput: virtual time")
            self.throughput()
        if "cosim" in phases:
            from bench import cosim

            self.say("cosim: ecu-sim cosim over loopback UDP, n = 1 and n = 100, beside simulate")
            self.result["cosim"] = cosim.measure(quick=self.o.throughput_repeats == 1)
            self.say("cosim:\n" + cosim.text(self.result["cosim"]))
        if "viewers" in phases:
            self.say("viewers: CPU per tick without and with --stream, --record .log and .mcap")
            span = "5" if self.o.quiet_s < 10 else "13"
            done = subprocess.run([sys.executable, "-m", "bench.viewers", "--seconds", span], cwd=REPO,
                                  env=child_env(), capture_output=True, text=True, check=True)
            self.result["viewers"] = json.loads(done.stdout)
        self.result["environment"]["loadavg_end"] = os.getloadavg()
        from bench import report

        self.result["targets"] = report.targets(self.result)
        table = report.table(self.result)
        (self.dir / "table.md").write_text(table, encoding="utf-8")
        with open(self.dir / "bench.json", "w", encoding="utf-8") as f:
            json.dump(self.result, f, indent=1, default=_json_default)
        print(table)
        if self.o.figure:
            figure = report.figure(self.timings, self.latencies, self.dir / "bench.png",
                                   title=_figure_title(self.result))
            self.say(f"figure: {figure}" if figure else "no figure: matplotlib is not installed "
                     "(scripts/bench installs it: pip install -e '.[bench]')")
        self.say(f"results: {self.dir}")
        return self.dir


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


def _ratios(timings: dict[str, analysis.StreamTiming], rep: int, background: float) -> dict[str, Any]:
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


def latencies(frames: Sequence[Sequence[Any]]) -> dict[str, analysis.Latency]:
    """APP-step latency of ecu-sim (port index 0) and of the testbed loop (1) in the latency phase."""
    from ecu_sim.codec.profile import Profile
    from ecu_sim.codec.role import Invalid

    profile = Profile.load("amp")

    def series(bus: int, ident: int, decode: Callable[[bytes], Any]) -> list[tuple[float, float]]:
        out = []
        for t, b, i, data in frames:
            if b == bus and i == ident:
                value = decode(bytes.fromhex(data))
                if not isinstance(value, Invalid):
                    out.append((float(t), float(value)))
        return out

    return {name: analysis.step_latency(series(bus, APP_ID, profile.app.decode),
                                        series(bus, SPEED_ID, profile.speed.decode))
            for name, bus in (("ecu-sim (ECU)", 0), ("testbed loop", 1))}


def reanalyze(folder: Path, figure: bool) -> int:
    """Recompute timing and latency of a finished run from its raw recordings; rewrite its results."""
    from bench import report

    with open(folder / "bench.json", encoding="utf-8") as f:
        result: dict[str, Any] = json.load(f)
    timings: dict[str, dict[str, analysis.StreamTiming]] = {}
    for phase in report.WIRE_PHASES:
        if phase not in result or "repetitions" not in result[phase]:
            continue
        for rep in result[phase]["repetitions"]:
            with open(folder / "raw" / f"{phase}-{rep['rep']}.json", encoding="ascii") as f:
                frames = json.load(f)["frames"]
            timings[phase] = wire_timings(frames, *rep["window"])
            rep["timing"] = {name: t.brief() for name, t in timings[phase].items()}
            rep["ratios"] = _ratios(timings[phase], rep["rep"], rep["conditions"]["background_cores"])
        result[phase].update(phase_summary(result[phase]["repetitions"]))
    lat: dict[str, analysis.Latency] = {}
    if "latency" in result:
        with open(folder / "raw" / "latency.json", encoding="ascii") as f:
            lat = latencies(json.load(f)["frames"])
        result["latency"] = {name: v.brief() for name, v in lat.items()}
    result["targets"] = report.targets(result)
    table = report.table(result)
    (folder / "table.md").write_text(table, encoding="utf-8")
    with open(folder / "bench.json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, default=_json_default)
    print(table)
    if figure:
        report.figure(timings, lat, folder / "bench.png", title=_figure_title(result))
    return 0


def _last_summary(log: Path) -> str | None:
    """ecu-sim's own closing line ("stopped after N ticks: L late, S skipped, ...")."""
    with contextlib.suppress(OSError):
        for line in reversed(log.read_text(errors="replace").splitlines()):
            if "stopped after" in line:
                return line.split("ecu_sim:", 1)[-1].strip()
    return None


def _json_default(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def _figure_title(result: dict[str, Any]) -> str:
    env = result["environment"]
    return (f"ecu-sim {env['git']} on {env['cpu']} x{env['cores']}, Python {env['python']}, "
            f"{time.strftime('%Y-%m-%d %H:%M')}")



def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", action="store_true",
                        help="a 10-minute quiet phase (drift after 10 min), once unless --repeats")
    parser.add_argument("--quick", action="store_true", help="a few seconds per phase: a smoke test")
    parser.add_argument("--quiet-seconds", type=float, help="length of the quiet phase (default 30)")
    parser.add_argument("--phases", help="comma-separated subset of: " + ",".join(Options.phases))
    parser.add_argument("--out", type=Path, help="results folder (default out/bench)")
    parser.add_argument("--no-figure", action="store_true", help="skip the PNG figure")
    parser.add_argument("--repeats", type=int, metavar="R",
                        help="repetitions of each timing phase, in rounds (default 5; --quick 2)")
    parser.add_argument("--no-probe", action="store_true",
                        help="no fourth, instrumented ECU in the timing phases")
    parser.add_argument("--port", type=int, default=0, help="first udp_multicast port (default random)")
    parser.add_argument("--reanalyze", type=Path, metavar="DIR",
                        help="recompute table, JSON and figure of a finished run from its raw recordings")
    args = parser.parse_args(argv)
    if args.reanalyze:
        return reanalyze(args.reanalyze, not args.no_figure)
    options = Options(figure=not args.no_figure, port_base=args.port, long=args.long)
    if args.long:
        options.quiet_s = 610.0
        options.repeats = 1  # the drift test is one long quiet phase; --repeats still applies
    if args.quick:
        options = dataclasses.replace(options, quiet_s=4.0, load_s=3.0, latency_s=4.0, startup_runs=1,
                                      throughput_repeats=1, repeats=2)
    if args.repeats is not None:
        if args.repeats < 1:
            parser.error("--repeats must be at least 1")
        options.repeats = args.repeats
    options.probe = not args.no_probe
    if args.quiet_seconds:
        options.quiet_s = args.quiet_seconds
    if args.phases:
        chosen = tuple(p.strip() for p in args.phases.split(",") if p.strip())
        unknown = set(chosen) - set(Options.phases)
        if unknown:
            parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
        options.phases = chosen
    if args.out:
        options.out = args.out
    Bench(options).run()
    return 0
