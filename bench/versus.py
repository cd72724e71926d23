"""``scripts/bench versus REV``: virtual-time rates of this tree beside a commit, in the same minutes.

The machines this project is measured on change speed from one minute to the next (a shared
host), so a rate only means something beside a baseline measured in the same minutes. REV's
package is exported with ``git archive`` into a temporary folder and run from there with the
same interpreter and libraries; each round runs every case once, baseline and this tree
alternating, and the ratio is taken within each round (pairwise), so a slow spell of the
machine falls on both sides of a ratio.

Cases, each its own process as a user runs it:

- ``simulate``: ``ecu-sim simulate --duration 3600`` (the testbed truck and the CCM), its own
  ticks/s (in the loop, start-up excluded), in both trees;
- ``class6``: the same with ``--vehicle class6 --route appendix-d``, in both trees when the
  baseline has the class6 truck;
- ``powertrain``: the same with ``--vehicle class6 --profile j1939 --network powertrain`` (four
  J1939 nodes on a 10 ms tick), in both trees when the baseline has the powertrain network;
- ``cosim n=1`` and ``cosim n=100``: ``ecu-sim cosim`` stepped over loopback UDP
  (bench/cosim.py), steps and ticks per second, in both trees when the baseline has the command.

Results go to OUT/versus.json and a Markdown table on stdout (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import cosim
from bench.processes import child_env

REPO = Path(__file__).resolve().parent.parent
_RATE = re.compile(r"\((\d+) ticks, (\d+) ticks/s[,)]")


@dataclass(frozen=True)
class Summary:
    """A case's rates over the rounds, and its ratio to the baseline's (pairwise, round by round)."""

    rates: tuple[float, ...]
    ratios: tuple[float, ...] = ()

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def best(self) -> float:
        return max(self.rates)

    @property
    def ratio_median(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None

    def ratio_range(self) -> tuple[float, float] | None:
        return (min(self.ratios), max(self.ratios)) if self.ratios else None


def pairwise(ours: Sequence[float], base: Sequence[float]) -> tuple[float, ...]:
    """Our rate over the baseline's, round by round (the two runs of a round are minutes apart
    at most, so they share the machine's speed)."""
    if len(ours) != len(base):
        raise ValueError(f"{len(ours)} rounds of ours against {len(base)} of the baseline")
    return tuple(a / b for a, b in zip(ours, base, strict=True))


def export(rev: str, into: Path) -> Path:
    """The ``ecu_sim`` package of commit ``rev`` and its ``dbc/`` folder (where the commit has one
    at the top), exported into ``into``; that folder goes first on PYTHONPATH to run it.
    SystemExit with the reason when git cannot find the commit."""
    has_dbc = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{rev}:dbc"],
                             capture_output=True, check=False).returncode == 0
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, "ecu_sim",
                              *(["dbc"] if has_dbc else [])], capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"scripts/bench versus: cannot export {rev!r}: "
                         f"{archive.stderr.decode(errors='replace').strip()}; give a commit of this "
                         "repository (e.g. a hash from git log)")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def simulate_rate(pythonpath: str | None, *extra: str) -> float:
    """``ecu-sim simulate --duration 3600`` in a process: its own ticks per second; the package
    first on ``pythonpath`` (a baseline's), or this tree's with None."""
    env = child_env()
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    # Not from the repository's folder: ``python -m`` puts the working folder first on sys.path.
    done = subprocess.run([sys.executable, "-m", "ecu_sim", "simulate", "--duration", "3600", *extra],
                          cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, check=False)
    match = _RATE.search(done.stderr)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"simulate {' '.join(extra)} failed: {done.stderr.strip()[-400:]}")
    return float(match.group(2))


def measure(rev: str, rounds: int, cosim_requests: int) -> dict[str, Any]:
    """``rounds`` rounds of every case, the baseline's simulate right before ours in each."""
    with tempfile.TemporaryDirectory(prefix="ecu-sim-baseline-") as folder:
        base = str(export(rev, Path(folder)))
        has_cosim = (Path(base) / "ecu_sim" / "cli" / "cosim.py").is_file()
        has_class6 = (Path(base) / "ecu_sim" / "vehicle" / "class6.py").is_file()
        has_powertrain = (Path(base) / "ecu_sim" / "powertrain" / "engine_control.py").is_file()
        class6 = ("--vehicle", "class6", "--route", "appendix-d")
        powertrain = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain")
        tree = str(REPO)

        def one_tick(tree: str | None) -> float:
            return float(cosim.exchange(1, cosim_requests, tree)["steps_per_s"])

        def hundred_ticks(tree: str | None) -> float:
            return float(cosim.exchange(100, max(1, cosim_requests // 10), tree)["ticks_per_s"])

        # (case, this tree's run, the baseline's run or None), run in this order in every round
        cases: list[tuple[str, Callable[[], float], Callable[[], float] | None]] = [
            ("simulate", lambda: simulate_rate(tree), lambda: simulate_rate(base)),
            ("class6", lambda: simulate_rate(tree, *class6),
             (lambda: simulate_rate(base, *class6)) if has_class6 else None),
            ("powertrain", lambda: simulate_rate(tree, *powertrain),
             (lambda: simulate_rate(base, *powertrain)) if has_powertrain else None),
            ("cosim n=1", lambda: one_tick(None), (lambda: one_tick(base)) if has_cosim else None),
            ("cosim n=100", lambda: hundred_ticks(None),
             (lambda: hundred_ticks(base)) if has_cosim else None),
        ]
        ours: dict[str, list[float]] = {name: [] for name, _, _ in cases}
        theirs: dict[str, list[float]] = {name: [] for name, _, baseline in cases if baseline is not None}
        for k in range(rounds):
            print(f"round {k + 1} of {rounds}", file=sys.stderr, flush=True)
            for name, run, baseline in cases:
                if baseline is not None:
                    theirs[name].append(baseline())
                ours[name].append(run())
    summaries = {f"baseline {name}": Summary(tuple(rates)) for name, rates in theirs.items()}
    for name, rates in ours.items():
        summaries[name] = Summary(tuple(rates), pairwise(rates, theirs[name]) if name in theirs else ())
    return {"rev": rev, "rounds": rounds, "loadavg": os.getloadavg(),
            "cases": {name: {"rates": s.rates, "median": s.median, "best": s.best,
                             "ratio_median": s.ratio_median, "ratio_range": s.ratio_range()}
                      for name, s in summaries.items()}}


def table(result: dict[str, Any]) -> str:
    units = {"cosim n=1": "steps/s", "baseline cosim n=1": "steps/s"}
    lines = [f"rounds: {result['rounds']}, baseline {result['rev']}, load average at the end "
             + " ".join(f"{x:.2f}" for x in result["loadavg"]), "",
             "| case | median | best | ratio to the baseline's, median of rounds (range) |",
             "|---|---:|---:|---|"]
    for name, c in result["cases"].items():
        unit = units.get(name, "ticks/s")
        ratio = "" if c["ratio_median"] is None else (
            f"{c['ratio_median']:.3f} ({c['ratio_range'][0]:.2f} .. {c['ratio_range'][1]:.2f})")
        lines.append(f"| {name} | {c['median']:,.0f} {unit} | {c['best']:,.0f} {unit} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench versus", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev", help="the baseline commit (a hash, a tag, HEAD~3 ...)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of every case (default 7)")
    parser.add_argument("--cosim-requests", type=int, default=20000,
                        help="requests of the n = 1 cosim case (n = 100: a tenth); default 20000")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "bench")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    result = measure(args.rev, args.rounds, args.cosim_requests)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "versus.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    sys.stdout.write(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
