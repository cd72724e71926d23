"""`ecu-sim dataset`: labelled captures as the HCRL Car-Hacking CSV layout, candump logs, a manifest."""

from __future__ import annotations

import json
from pathlib import Path

import can
import pandas as pd

from ecu_sim.attack.dataset import COLUMNS
from tests.conftest import Cli
from tests.helpers.attacked import simulate


def dataset(cli_main: Cli, tmp_path: Path) -> Path:
    one, _ = simulate(cli_main, tmp_path, "tsc1:speed=2000@1+2", "claim@5", name="one")
    two, _ = simulate(cli_main, tmp_path, "request:rate=100@2+1", seed="3", name="two")
    out = tmp_path / "dataset"
    result = cli_main("dataset", str(one), str(two), "--out", str(out))
    assert result.status == 0, result.err
    return out


def test_the_dataset_opens_in_pandas_with_the_car_hacking_columns_and_the_labels(cli_main: Cli,
                                                                                 tmp_path: Path) -> None:
    frames = pd.read_csv(dataset(cli_main, tmp_path) / "frames.csv", dtype=str)
    assert tuple(frames.columns) == COLUMNS
    assert set(frames["Flag"]) == {"R", "T"}
    assert (frames["Flag"] == "T").equals(frames["attack"] != "benign")
    by_run = frames[frames["Flag"] == "T"].groupby(["run", "attack"]).size().to_dict()
    assert by_run == {("run0000", "claim"): 1, ("run0000", "tsc1"): 200, ("run0001", "request"): 100}


def test_the_injected_frames_lie_in_the_windows_the_manifest_gives(cli_main: Cli, tmp_path: Path) -> None:
    out = dataset(cli_main, tmp_path)
    frames = pd.read_csv(out / "frames.csv", dtype={"CAN ID": str, "attack": str, "run": str})
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for run in manifest["runs"]:
        for attack in run["attacks"]:
            mine = frames[(frames["run"] == run["run"]) & (frames["label"] == attack["label"])]
            end = attack["end_s"] if attack["end_s"] is not None else float("inf")
            assert mine["Timestamp"].between(attack["start_s"], end, inclusive="left").all()
            assert len(mine) == run["frames_by_kind"][attack["kind"]]


def test_the_manifest_names_each_cases_seed_and_the_candump_logs_replay(cli_main: Cli,
                                                                         tmp_path: Path) -> None:
    out = dataset(cli_main, tmp_path)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [run["seed"] for run in manifest["runs"]] == [0, 3]
    for run in manifest["runs"]:
        assert len(list(can.LogReader(out / f"{run['run']}.log"))) == run["frames"]


def test_a_file_that_is_no_labelled_capture_exits_2_naming_it(cli_main: Cli, tmp_path: Path) -> None:
    plain = tmp_path / "plain.log"
    plain.write_text("(0.000000) can0 18FEF100#0000000000000000 R\n", encoding="ascii")
    result = cli_main("dataset", str(plain), "--out", str(tmp_path / "out"))
    assert result.status == 2 and "plain.log is not a labelled capture" in result.err


def test_a_log_with_more_frames_than_labels_exits_2(cli_main: Cli, tmp_path: Path) -> None:
    one, _ = simulate(cli_main, tmp_path, "claim@1", duration="3", name="one")
    with open(one, "a", encoding="ascii") as log:
        log.write("(99.000000) vcan0 18FEF100#0000000000000000 R\n")
    result = cli_main("dataset", str(one), "--out", str(tmp_path / "out"))
    assert result.status == 2
    assert "not as many frames" in result.err and "runs on" in result.err
