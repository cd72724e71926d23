"""``campaign compare A/results.csv B/results.csv --traces``: two versions of a controller, case by
case. The difference between the versions is weighed against the spread between runs of one
version: *differs* when even the closest pair of runs of A and B differ beyond tolerance plus
spread, *same* when even the farthest pair do not, *inconclusive* otherwise; exit 0 only when
every case is the same.

The tables and traces here are written by the test (what ``--keep-traces`` writes), so the rules
are checked without running anything in real time; tests/campaign/test_controller_under_test.py
runs the real thing.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ecu_sim.campaign import traces
from tests.conftest import Cli

Speed = Callable[[int], float]
TICKS = 50


def flat(kph: float) -> Speed:
    return lambda tick: kph


def version(folder: Path, cases: dict[str, Sequence[Speed]], app: float | Speed = 30.0,
            status: str = "ok", route: str = "",
            metres: Callable[[int], float] = lambda tick: tick * 2.5) -> str:
    """A results table with a row per run of each case (``ID-1`` .. ``ID-R``), and their traces."""
    (folder / "traces").mkdir(parents=True)
    rows = []
    for case, runs in cases.items():
        for number, speed in enumerate(runs, 1):
            run_id = f"{case}-{number}" if len(runs) > 1 else case
            rows.append({"id": run_id, "status": status, "run.set_speed_kph": "90", "run.grade_file": route})
            with open(folder / "traces" / f"{run_id}.csv", "w", newline="") as out:
                out.write("t_s,speed_kph,app_pct,grade_pct,distance_m\n")
                for tick in range(TICKS):
                    pedal = app(tick) if callable(app) else app
                    out.write(f"{1000 + tick * 0.1:.3f},{speed(tick):.6f},{pedal:.4f},0,{metres(tick):.3f}\n")
    with open(folder / "results.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, ["id", "status", "run.set_speed_kph", "run.grade_file"])
        writer.writeheader()
        writer.writerows(rows)
    return str(folder / "results.csv")


def verdict_of(a: str, b: str) -> traces.TraceVerdict:
    (found,) = traces.compare(a, b, traces.Tolerance(speed_kph=0.5, command_pct=2.0))
    return found


def test_identical_traces_are_the_same(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90)]})
    b = version(tmp_path / "b", {"c1": [flat(90)]})
    assert verdict_of(a, b).verdict == "same"


def test_a_speed_difference_beyond_the_tolerance_differs_and_says_when_it_began(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90)]})
    b = version(tmp_path / "b", {"c1": [lambda tick: 90.0 if tick < 20 else 92.0]})
    found = verdict_of(a, b)
    assert found.verdict == "differs"
    assert found.first is not None and found.first.first_s == pytest.approx(2.0)
    assert found.first.speed_max == pytest.approx(2.0)


def test_a_command_difference_alone_differs(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90)]}, app=30.0)
    b = version(tmp_path / "b", {"c1": [flat(90)]}, app=40.0)
    found = verdict_of(a, b)
    assert found.verdict == "differs"
    assert found.first is not None and found.first.command_max == pytest.approx(10.0)


def test_a_command_step_one_tick_earlier_is_no_difference(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90)]}, app=lambda tick: 0.0 if tick < 10 else 100.0)
    b = version(tmp_path / "b", {"c1": [flat(90)]}, app=lambda tick: 0.0 if tick < 9 else 100.0)
    assert verdict_of(a, b).verdict == "same"


def test_a_command_step_three_ticks_later_differs(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90)]}, app=lambda tick: 0.0 if tick < 10 else 100.0)
    b = version(tmp_path / "b", {"c1": [flat(90)]}, app=lambda tick: 0.0 if tick < 13 else 100.0)
    assert verdict_of(a, b).verdict == "differs"


def test_a_difference_no_larger_than_the_spread_within_each_version_is_the_same(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90), flat(91)]})
    b = version(tmp_path / "b", {"c1": [flat(90.5), flat(91.5)]})
    found = verdict_of(a, b)
    assert found.spread_speed == pytest.approx(1.0)
    assert found.verdict == "same"


def test_a_difference_beyond_the_spread_for_every_pair_of_runs_differs(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90), flat(90.2)]})
    b = version(tmp_path / "b", {"c1": [flat(93), flat(93.2)]})
    assert verdict_of(a, b).verdict == "differs"


def test_pairs_that_are_close_and_far_at_once_are_inconclusive(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90), flat(91)]})  # spread 1, so a limit of 1.5
    b = version(tmp_path / "b", {"c1": [flat(91.4), flat(92.4)]})  # pairs 0.4 .. 2.4 apart
    assert verdict_of(a, b).verdict == "inconclusive"


def test_a_case_on_a_route_is_aligned_by_the_distance_driven(tmp_path: Path) -> None:
    def by_place(metres: Callable[[int], float]) -> Speed:
        return lambda tick: 80.0 if metres(tick) < 50.0 else 90.0  # the speed a hill sets, by place

    def late(tick: int) -> float:  # the same road, reached five ticks later
        return max(0.0, (tick - 5) * 2.5)

    def early(tick: int) -> float:
        return tick * 2.5

    a = version(tmp_path / "a", {"c1": [by_place(early)]}, route="hilly.csv", metres=early)
    b = version(tmp_path / "b", {"c1": [by_place(late)]}, route="hilly.csv", metres=late)
    assert verdict_of(a, b).verdict == "same"


def test_a_case_missing_from_the_second_table_is_inconclusive(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90)], "c2": [flat(80)]})
    b = version(tmp_path / "b", {"c1": [flat(90)]})
    found = {v.case: v for v in traces.compare(a, b, traces.Tolerance())}
    assert found["c2"].verdict == "inconclusive" and "missing" in found["c2"].reason


def test_a_case_that_fails_only_in_one_version_differs(tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90)]})
    b = version(tmp_path / "b", {"c1": [flat(90)]}, status="failed")
    assert verdict_of(a, b).verdict == "differs"


def test_the_exit_status_is_0_only_when_every_case_is_the_same(cli_main: Cli, tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90)], "c2": [flat(80)]})
    same = version(tmp_path / "same", {"c1": [flat(90)], "c2": [flat(80)]})
    other = version(tmp_path / "other", {"c1": [flat(90)], "c2": [flat(85)]})
    assert cli_main("campaign", "compare", a, same, "--traces").status == 0
    result = cli_main("campaign", "compare", a, other, "--traces")
    assert result.status == 1
    assert "differs: case c2" in result.out and "same: case c1" in result.out
    assert "2 cases: 1 same, 1 differs, 0 inconclusive" in result.out


def test_a_figure_is_drawn_for_each_case_that_is_not_the_same(cli_main: Cli, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    a = version(tmp_path / "a", {"c1": [flat(90)], "c2": [flat(80)]})
    b = version(tmp_path / "b", {"c1": [flat(90)], "c2": [flat(85)]})
    cli_main("campaign", "compare", a, b, "--traces", "--png", str(tmp_path / "png"))
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == ["c2.png"]


def test_a_table_without_traces_is_one_clear_line(cli_main: Cli, tmp_path: Path) -> None:
    a = version(tmp_path / "a", {"c1": [flat(90)]})
    b = version(tmp_path / "b", {"c1": [flat(90)]})
    (tmp_path / "b" / "traces" / "c1.csv").unlink()
    result = cli_main("campaign", "compare", a, b, "--traces")
    assert result.status == 2
    assert "--keep-traces" in result.err and "Traceback" not in result.err
