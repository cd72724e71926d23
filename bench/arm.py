"""A tick's CPU parts on the boards' instruction sets: ``python -m bench.arm [--rounds N]``.

``bench.tickcost`` runs natively and in the armhf and arm64 root file systems that
``scripts/arm-test`` caches (their ``/opt/ecu-sim/venv`` has python-can, cantools and msgpack),
under qemu's user-mode emulation, with this tree bind-mounted read-only, in alternating rounds so
the host's drifting speed falls on all three alike. Prints one table of microseconds per part and
the ratio of each emulated figure to the native one. Needs root (chroot, bind mounts); a missing
root file system is skipped with a note (run ``scripts/arm-test`` once first).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ecu-sim" / "arm-test"
ARCHES = ("armhf", "arm64")
#: where the tree appears inside a board's root file system
INSIDE = "/mnt/ecu-sim-src"
#: emulation is slow: fewer calls per part
EMULATED_SCALE = 0.2


def native() -> dict[str, float]:
    done = subprocess.run([sys.executable, "-m", "bench.tickcost"], cwd=REPO, capture_output=True,
                          text=True, check=True)
    us: dict[str, float] = json.loads(done.stdout)["us"]
    return us


def emulated(arch: str) -> dict[str, float] | None:
    """The parts in the board's root file system, or None when it is not cached."""
    root = CACHE / f"board-{arch}"
    python = root / "opt/ecu-sim/venv/bin/python"
    if not python.exists():
        return None
    mount = root / INSIDE.lstrip("/")
    mount.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", "-o", "ro", str(REPO), str(mount)], check=True)
    try:
        done = subprocess.run(
            ["chroot", str(root), "/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "HOME=/root",
             f"PYTHONPATH={INSIDE}", "PYTHONDONTWRITEBYTECODE=1", "/opt/ecu-sim/venv/bin/python", "-m",
             "bench.tickcost", "--scale", str(EMULATED_SCALE)],
            capture_output=True, text=True, check=True)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
    us: dict[str, float] = json.loads(done.stdout)["us"]
    return us


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def measure(rounds: int) -> dict[str, Any]:
    """Alternating rounds of native and emulated runs; the median of each part."""
    runs: dict[str, list[dict[str, float]]] = {"x86-64": [], **{a: [] for a in ARCHES}}
    for _ in range(rounds):
        runs["x86-64"].append(native())
        for arch in ARCHES:
            got = emulated(arch)
            if got is not None:
                runs[arch].append(got)
    return {name: {part: median([r[part] for r in rs]) for part in rs[0]}
            for name, rs in runs.items() if rs}


def table(result: dict[str, dict[str, float]]) -> str:
    names = list(result)
    lines = ["| part of a tick | " + " | ".join(f"{n} (us)" for n in names) + " | " +
             " | ".join(f"{n} / x86-64" for n in names[1:]) + " |",
             "|---|" + "---|" * (2 * len(names) - 1)]
    for part, base in result["x86-64"].items():
        cells = [f"{result[n][part]:.1f}" for n in names]
        ratios = [f"{result[n][part] / base:.1f}" for n in names[1:]]
        lines.append(f"| {part} | " + " | ".join(cells + ratios) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.arm")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    result = measure(args.rounds)
    print(json.dumps(result))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
