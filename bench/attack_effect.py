"""``scripts/bench attack-effect [--repeat N] [--out FILE]``: an attack's effect on the real-time
ECU beside the same case in ``simulate``.

``simulate`` repeats bit for bit, so its effect is one figure; a real-time run has the operating
system's timing, three processes started apart and a bus between them, so its effect is a spread,
and the spread is what the documentation can promise (docs/attacks.md). Each attack is run:

- in ``simulate``, attacked and as its attack-free twin (the campaign's case);
- ``--repeat`` times in real time on a private host-local udp_multicast bus: ``ecu-sim run`` (the
  truck, recording to MCAP), ``ecu-sim ccm`` (the cruise control) and ``ecu-sim attack`` (its
  capture), each a process of its own.

Both are scored by the same figures, the campaign's (ecu_sim.campaign.effect): the speed's largest
deviation from the simulated twin from the attack's start on, the time to a deviation above
EFFECT_KPH, and the DTCs the truck's nodes sent in DM1 after the attack's start and not before it.
A real-time run is aligned on the attack's first frame (the capture's wall clock against the
recording's), and its deviation before the attack is printed too: what real time differs from the
twin by without any attack.

With ``--acc``, the ACC example's minimum gap instead (issue 33 names it as an effect figure): a
campaign knows no lead vehicle and examples/acc.py runs on the wall clock only, so the figure is
this benchmark's: examples/acc.py in place of the CCM, following examples/lead.csv, ``--repeat``
times without an attack and with a TSC1 speed override over the lead's braking.
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import can

from bench.processes import REPO, child_env, ecu_sim_command, private_bus
from ecu_sim.attack.capture import read_labels
from ecu_sim.campaign.effect import EFFECT_KPH
from ecu_sim.j1939 import dm
from ecu_sim.j1939.dm import DM1_PGN
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.plot.series import Series, load_series

#: the campaign's case (examples/attacks.toml at 0 % grade), cut to DURATION_S
TRUCK = ["--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0",
         "--initial-speed", "80"]
SET_SPEED = ["--set-speed", "90"]
FROM_S, FOR_S, DURATION_S = 20.0, 10.0, 40.0
#: the real-time processes run this much longer than the attacker, so that it ends first
SPARE_S = 3.0
ATTACKS = ("tsc1:speed=2000", "xbr:accel=-4", "spoof:message=ebc1,spn=521,value=100",
           "spoof:message=ccvs1,spn=84,value=0")
#: the seconds before the attack over which real time is compared with the twin without an attack
BEFORE_S = 5.0
#: with --acc: examples/acc.py follows examples/lead.csv, whose lead brakes from 10 s to 15.56 s; the
#: override covers the braking
ACC_ATTACK, ACC_FROM_S, ACC_FOR_S = "tsc1:source=0x27,speed=2000", 8.0, 10.0
ACC_SAYS = re.compile(r"minimum gap (?P<gap>-?[0-9.]+) m at (?P<at>[0-9.]+) s")


@dataclass
class Figures:
    """One run's effect, as the campaign computes it."""

    mode: str
    attack: str
    speed_dev_max_kph: float
    time_to_effect_s: float | None
    dtcs: str
    before_dev_max_kph: float = 0.0


def twin_at(twin: Series, t_s: float) -> float:
    """The twin's speed at ``t_s``: its newest tick at or before it (the first before its start)."""
    return twin.values["speed_kph"][max(0, bisect.bisect_right(twin.t_s, t_s) - 1)]


def deviations(run: Series, twin: Series, start_s: float) -> tuple[list[float], list[float]]:
    """The run's speed deviation from the twin, at each of the run's ticks: (the run's times after
    its attack's start, taken on the twin's clock where the attack starts at FROM_S; deviations)."""
    taus, devs = [], []
    for t_s, speed in zip(run.t_s, run.values["speed_kph"], strict=True):
        tau = t_s - start_s
        if -BEFORE_S <= tau < DURATION_S - FROM_S:
            taus.append(tau)
            devs.append(abs(speed - twin_at(twin, FROM_S + tau)))
    return taus, devs


def score(mode: str, attack: str, run: Series, twin: Series, start_s: float, dtcs: str) -> Figures:
    """The figures of ``run``, whose attack started at ``start_s`` on its clock, beside ``twin``."""
    taus, devs = deviations(run, twin, start_s)
    after = [(tau, dev) for tau, dev in zip(taus, devs, strict=True) if tau >= 0.0]
    hit = next((tau for tau, dev in after if dev > EFFECT_KPH), None)
    return Figures(mode, attack, max((dev for _, dev in after), default=0.0), hit, dtcs,
                   max((dev for tau, dev in zip(taus, devs, strict=True) if tau < 0.0), default=0.0))


def first_injected(capture: Path) -> tuple[float, list[can.Message]]:
    """The time of the attacker's first frame in ``capture``, and the frames the others sent."""
    _, labels = read_labels(str(capture))
    frames = list(can.LogReader(str(capture)))
    start = next(msg.timestamp for msg, label in zip(frames, labels, strict=True) if label)
    return start, [msg for msg, label in zip(frames, labels, strict=True) if not label]


def raised(benign: Sequence[can.Message], start: float) -> str:
    """The DTCs the truck's nodes sent in DM1 from ``start`` on and not before, as ``SPN:FMI``."""
    before: set[tuple[int, int]] = set()
    after: set[tuple[int, int]] = set()
    for msg in benign:
        if pgn_of(msg.arbitration_id) == DM1_PGN:
            found = {(d.spn, d.fmi) for d, _ in dm.unpack_dtcs(bytes(msg.data))}
            (after if msg.timestamp >= start else before).update(found)
    return " ".join(f"{spn}:{fmi}" for spn, fmi in sorted(after - before))


def _run(argv: list[str], folder: Path) -> None:
    subprocess.run(argv, cwd=folder, env=child_env(), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=600)


def simulated(attack: str, folder: Path, twin: Series) -> Figures:
    spec = f"{attack}@{FROM_S:g}+{FOR_S:g}"
    _run([*ecu_sim_command(), "simulate", *TRUCK, *SET_SPEED, "--duration", f"{DURATION_S:g}",
          "--attack", spec, "--capture", "sim.log", "--out", "sim.csv"], folder)
    start, benign = first_injected(folder / "sim.log")
    return score("simulate", attack, load_series(str(folder / "sim.csv")), twin, start, raised(benign, start))


def real_time(attack: str, folder: Path, twin: Series) -> Figures:
    """One real-time run: the three processes on a private bus, each stopping at its duration."""
    group, port = private_bus()
    bus = ["-i", "udp_multicast", "-c", group, "--bus-kwargs", f"port={port}"]
    running = f"{DURATION_S + SPARE_S:g}"
    commands = [
        [*ecu_sim_command(), "run", *TRUCK, *bus, "--duration", running, "--record", "ecu.mcap",
         "--log-level", "warning"],
        [*ecu_sim_command(), "ccm", "--vehicle", "class6", "--profile", "j1939", *SET_SPEED, *bus,
         "--duration", running, "--log-level", "warning"],
        [*ecu_sim_command(), "attack", *bus, "--attack", f"{attack}@{FROM_S:g}+{FOR_S:g}",
         "--duration", f"{DURATION_S:g}", "--capture", "rt.log"],
    ]
    procs = [(name, subprocess.Popen(argv, cwd=folder, env=child_env(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL))
             for name, argv in zip(("run", "ccm", "attack"), commands, strict=True)]
    for name, proc in procs:
        if proc.wait(DURATION_S * 4) != 0:
            raise SystemExit(f"scripts/bench attack-effect: ecu-sim {name} exited {proc.returncode}")
    ecu = load_series(str(folder / "ecu.mcap"))
    start_wall, benign = first_injected(folder / "rt.log")
    at = bisect.bisect_left(ecu.wall_s, start_wall)
    start = ecu.t_s[min(at, len(ecu.t_s) - 1)]
    return score("real time", attack, ecu, twin, start, raised(benign, start_wall))


def minimum_gap(said: str) -> float:
    """The smallest gap examples/acc.py reports when it stops, in metres."""
    found = ACC_SAYS.search(said)
    if found is None:
        raise SystemExit(f"scripts/bench attack-effect: examples/acc.py gave no gap: {said.strip()!r}")
    return float(found["gap"])


def acc_run(attack: str | None, folder: Path) -> float:
    """The smallest gap examples/acc.py keeps behind its lead in real time, the truck attacked or not.

    The gap is the one the example integrates from the truck's CCVS1 speed: true while CCVS1 is,
    so the attack is one on the truck (TSC1 at the highest priority), not on its speed signal."""
    group, port = private_bus()
    bus = ["-i", "udp_multicast", "-c", group, "--bus-kwargs", f"port={port}"]
    running = f"{DURATION_S + 3 * SPARE_S:g}"  # the example starts its clock when it hears the truck
    ecu = subprocess.Popen([*ecu_sim_command(), "run", *TRUCK, *bus, "--duration", running, "--log-level",
                            "warning"], cwd=folder, env=child_env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    acc = subprocess.Popen(
        [sys.executable, str(REPO / "examples" / "acc.py"), "--lead", str(REPO / "examples" / "lead.csv"),
         "-c", group, "--port", str(port), "--hop-limit", "0", "--duration", f"{DURATION_S:g}"],
        cwd=folder, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    processes = [ecu]
    if attack is not None:
        processes.append(subprocess.Popen(
            [*ecu_sim_command(), "attack", *bus, "--attack", f"{attack}@{ACC_FROM_S:g}+{ACC_FOR_S:g}",
             "--duration", f"{DURATION_S:g}"], cwd=folder, env=child_env(), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
    said, _ = acc.communicate(timeout=DURATION_S * 4)
    for proc in processes:
        proc.wait(DURATION_S * 4)
    return minimum_gap(said)


def acc_table(repeat: int, folder: Path) -> str:
    """The ACC example's minimum gap, median (range) of ``repeat`` runs, without and with the attack."""
    lines = ["| examples/acc.py behind examples/lead.csv | minimum gap, m: median (range) |", "|---|---:|"]
    for attack in (None, ACC_ATTACK):
        gaps = [acc_run(attack, folder) for _ in range(repeat)]
        name = "no attack" if attack is None else f"`{attack}@{ACC_FROM_S:g}+{ACC_FOR_S:g}`"
        lines.append(f"| {name} | {statistics.median(gaps):.1f} ({min(gaps):.1f} .. {max(gaps):.1f}) |")
    return "\n".join(lines)


def spread(runs: Sequence[Figures]) -> str:
    """Median and range of the real-time runs' figures, as a table cell each."""
    def cell(values: list[float], fmt: str) -> str:
        if not values:
            return "never"
        return f"{statistics.median(values):{fmt}} ({min(values):{fmt}} .. {max(values):{fmt}})"

    hits = [r.time_to_effect_s for r in runs if r.time_to_effect_s is not None]
    effect = cell(hits, ".2f") + ("" if len(hits) == len(runs) else f", {len(runs) - len(hits)} never")
    dtcs = sorted({r.dtcs or "-" for r in runs})
    return (f"{cell([r.speed_dev_max_kph for r in runs], '.2f')} | {effect} | {' / '.join(dtcs)} | "
            f"{cell([r.before_dev_max_kph for r in runs], '.2f')}")


def table(results: Sequence[Figures]) -> str:
    lines = [f"| attack (@{FROM_S:g}+{FOR_S:g}) | mode | speed dev. max, km/h | time to effect, s | DTCs | "
             "dev. before the attack, km/h |", "|---|---|---:|---:|---|---:|"]
    for attack in dict.fromkeys(r.attack for r in results):
        sim = next(r for r in results if r.attack == attack and r.mode == "simulate")
        hit = "never" if sim.time_to_effect_s is None else f"{sim.time_to_effect_s:.2f}"
        lines.append(f"| `{attack}` | simulate | {sim.speed_dev_max_kph:.2f} | {hit} | {sim.dtcs or '-'} | "
                     f"{sim.before_dev_max_kph:.2f} |")
        runs = [r for r in results if r.attack == attack and r.mode == "real time"]
        lines.append(f"| | real time, median (range) of {len(runs)} | {spread(runs)} |")
    return "\n".join(lines)


def measure(repeat: int, attacks: Sequence[str]) -> list[Figures]:
    results: list[Figures] = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        _run([*ecu_sim_command(), "simulate", *TRUCK, *SET_SPEED, "--duration", f"{DURATION_S:g}",
              "--out", "twin.csv"], folder)
        twin = load_series(str(folder / "twin.csv"))
        for attack in attacks:
            results.append(simulated(attack, folder, twin))
            results += [real_time(attack, folder, twin) for _ in range(repeat)]
            print(f"{attack}: done", flush=True)
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench attack-effect", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="real-time runs per attack (default 3)")
    parser.add_argument("--attack", action="append",
                        help=f"an attack without its window, again for more (default: {', '.join(ATTACKS)})")
    parser.add_argument("--out", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--acc", action="store_true",
                        help="instead: examples/acc.py's minimum gap, without and with a TSC1 override")
    args = parser.parse_args(argv)
    if args.acc:
        with tempfile.TemporaryDirectory() as name:
            print(acc_table(args.repeat, Path(name)))
        return 0
    results = measure(args.repeat, args.attack or ATTACKS)
    print(table(results))
    if args.out is not None:
        args.out.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return 0
