"""Where a campaign runs changes nothing in its results, and an interrupted campaign finishes.

One worker, two workers and a two-worker Dask LocalCluster write the same table byte for byte
(same ids, same figures, same frame hashes); a campaign process killed with SIGKILL mid-way and
run again with ``--resume`` ends with every case exactly once, running only the cases the killed
run had not finished.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import HANG_S, Cli, clean_env, ecu_sim_command

#: a dozen short, different cases: gains, set speeds, a dropout with its seed
CAMPAIGN = """
[base]
run.duration_s = 120

[matrix]
run.set_speed_kph = [80, 95]
controller.kp = [10, 25]

[[case]]
faults.inject = ["drop=0.2"]
faults.seed = 3

[random]
count = 7
seed = 11
run.initial_speed_kph = {uniform = [50, 100]}
run.grade_pct = {choice = [-1.0, 0.0, 2.0]}
"""


def campaign_file(tmp_path: Path, text: str = CAMPAIGN) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def run_with(cli_main: Cli, path: Path, out: Path, *options: str) -> bytes:
    result = cli_main("campaign", str(path), "--out", str(out), *options)
    assert result.status == 0, result.err
    return (out / "results.csv").read_bytes()


def test_one_worker_and_two_workers_write_the_same_table(cli_main: Cli, tmp_path: Path) -> None:
    path = campaign_file(tmp_path)
    one = run_with(cli_main, path, tmp_path / "one", "--workers", "1")
    two = run_with(cli_main, path, tmp_path / "two", "--workers", "2")
    assert one == two
    assert one.count(b"\n") == 1 + 2 * 2 + 1 + 7


def test_a_dask_local_cluster_writes_the_same_table_as_local_processes(cli_main: Cli, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    path = campaign_file(tmp_path)
    local = run_with(cli_main, path, tmp_path / "local", "--workers", "2")
    dask = run_with(cli_main, path, tmp_path / "dask", "--workers", "2", "--executor", "dask")
    assert local == dask


def test_a_running_dask_cluster_named_by_its_scheduler_writes_the_same_table(
        cli_main: Cli, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    path = campaign_file(tmp_path, "[base]\nrun.duration_s = 60\n[matrix]\nrun.set_speed_kph = [80, 90]\n"
                                   "controller.kp = [10, 25]\n")
    local = run_with(cli_main, path, tmp_path / "local", "--workers", "1")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = run_with(cli_main, path, tmp_path / "remote", "--executor", "dask",
                          "--scheduler", cluster.scheduler_address)
    assert local == remote


def test_kept_traces_are_one_csv_per_case_named_by_its_id(cli_main: Cli, tmp_path: Path) -> None:
    path = campaign_file(tmp_path, "[base]\nrun.duration_s = 30\n[matrix]\nrun.set_speed_kph = [80, 90]\n")
    table = run_with(cli_main, path, tmp_path / "out", "--workers", "1", "--keep-traces").decode()
    ids = [line.split(",", 1)[0] for line in table.splitlines()[1:]]
    traces = sorted(p.name for p in (tmp_path / "out" / "traces").iterdir())
    assert traces == sorted(f"{i}.csv" for i in ids)
    assert len((tmp_path / "out" / "traces" / traces[0]).read_text().splitlines()) == 1 + 300


def test_parquet_holds_the_same_rows_as_the_csv(cli_main: Cli, tmp_path: Path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")
    path = campaign_file(tmp_path, "[base]\nrun.duration_s = 30\n[matrix]\nrun.set_speed_kph = [80, 90]\n")
    table = run_with(cli_main, path, tmp_path / "out", "--workers", "1", "--parquet").decode()
    read = parquet.read_table(tmp_path / "out" / "results.parquet")
    assert read.column("id").to_pylist() == [line.split(",", 1)[0] for line in table.splitlines()[1:]]


def complete_rows(results: Path) -> list[str]:
    """The rows of a table as a killed run left it: whole lines after the header."""
    data = results.read_text() if results.exists() else ""
    return data[: data.rfind("\n") + 1].splitlines()[1:]


def test_a_campaign_killed_mid_way_resumes_without_losing_or_repeating_a_case(
        cli_main: Cli, tmp_path: Path) -> None:
    path = campaign_file(tmp_path, "[base]\nrun.duration_s = 300\n[random]\ncount = 40\nseed = 5\n"
                                   "run.initial_speed_kph = {uniform = [40, 100]}\n")
    out = tmp_path / "out"
    results = out / "results.csv"
    process = subprocess.Popen(ecu_sim_command("campaign", str(path), "--out", str(out), "--workers", "2"),
                               env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + HANG_S
        while len(complete_rows(results)) < 3:  # a few cases done, most still to run
            assert process.poll() is None, "the campaign ended before it could be killed"
            assert time.monotonic() < deadline, "no case finished: the campaign hangs"
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the campaign and its workers, as a lost node would
        process.wait(HANG_S)
    before = complete_rows(results)
    assert 3 <= len(before) < 40

    result = cli_main("campaign", str(path), "--out", str(out), "--workers", "2", "--resume")
    assert result.status == 0, result.err
    ran = re.search(r"40 cases \((\d+) run now", result.out)
    assert ran is not None and int(ran.group(1)) == 40 - len(before)
    after = complete_rows(results)
    ids = [row.split(",", 1)[0] for row in after]
    assert len(ids) == len(set(ids)) == 40
    assert set(before) <= set(after)  # the rows finished before the kill, unchanged
