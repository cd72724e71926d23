"""examples/detector.py, the baseline detector: trained on one dataset, scored on another, through
its command line, as a researcher runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, Cli
from tests.helpers.attacked import simulate


def make_dataset(cli_main: Cli, folder: Path, name: str, *attacks: str, seed: str) -> Path:
    capture, _ = simulate(cli_main, folder, *attacks, seed=seed, name=name)
    out = folder / name
    assert cli_main("dataset", str(capture), "--out", str(out)).status == 0
    return out


def recalls(output: str) -> dict[str, float]:
    rows = [line.split("|") for line in output.splitlines() if line.startswith("| ") and "---" not in line]
    return {cells[1].strip(): float(cells[3]) for cells in rows[1:]}


def test_the_baseline_detector_finds_injected_tsc1_and_fuzzing_in_a_dataset_it_was_not_trained_on(
        cli_main: Cli, tmp_path: Path) -> None:
    train = make_dataset(cli_main, tmp_path, "train", "dm11@6", seed="1")
    test = make_dataset(cli_main, tmp_path, "test", "tsc1:speed=2000@2+2", "fuzz:rate=200@5+1", seed="2")
    done = subprocess.run([sys.executable, str(REPO / "examples" / "detector.py"), str(train), str(test)],
                          capture_output=True, text=True, check=True)
    found = recalls(done.stdout)
    assert found["tsc1"] == 1.0
    assert found["fuzz"] >= 0.99
