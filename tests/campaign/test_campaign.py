"""``ecu-sim campaign``: a TOML file expands into cases with stable ids, each case a row of key
figures; a mistake in the file names its key and line (exit 2); a failing case is recorded and the
others run; ``campaign compare`` gates on figures that got worse with its exit status.

Executors, resuming and Dask are in tests/campaign/test_campaign_executors.py.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from ecu_sim.campaign import matrix, spec
from ecu_sim.campaign.case import run_case
from ecu_sim.runs import simulation
from tests.conftest import Cli

#: short cases: a simulated minute or two, so the tests are quick on a busy machine
SHORT = """
[base]
run.duration_s = 60
"""


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def cases_of(path: Path) -> list[matrix.Case]:
    return matrix.expand(spec.load(path))


def table(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


# -- expansion and ids ---------------------------------------------------------------------------------


def test_a_matrix_is_the_cartesian_product_plus_explicit_cases_plus_random_draws(tmp_path: Path) -> None:
    path = write(tmp_path, SHORT + """
[matrix]
run.set_speed_kph = [70, 80, 90]
controller.kp = [10, 20]

[[case]]
run.set_speed_kph = 50

[[case]]
run.grade_pct = 2.0

[random]
count = 4
seed = 1
run.initial_speed_kph = {uniform = [40, 100]}
""")
    cases = cases_of(path)
    assert len(cases) == 3 * 2 + 2 + 4
    speeds_and_gains = {(dict((k, v) for k, v, _ in c.values)["run.set_speed_kph"],
                         dict((k, v) for k, v, _ in c.values)["controller.kp"]) for c in cases[:6]}
    assert speeds_and_gains == {(s, k) for s in ("70", "80", "90") for k in ("10", "20")}


def test_every_case_carries_the_base_settings_and_its_own_win(tmp_path: Path) -> None:
    path = write(tmp_path, SHORT + """
run.set_speed_kph = 85
[[case]]
run.set_speed_kph = 60
[[case]]
controller.ki = 1.0
""")
    first, second = (case.settings() for case in cases_of(path))
    assert (first.run.set_speed_kph, first.run.duration_s) == (60.0, 60.0)
    assert (second.run.set_speed_kph, second.controller.ki) == (85.0, 1.0)


def test_a_case_id_is_the_same_however_often_and_in_whatever_order_the_file_lists_it(
        tmp_path: Path) -> None:
    one = write(tmp_path, SHORT + "[matrix]\nrun.set_speed_kph = [80, 90]\ncontroller.kp = [10, 20]\n",
                "a.toml")
    other = write(tmp_path, SHORT + "[matrix]\ncontroller.kp = [20, 10]\nrun.set_speed_kph = [90, 80]\n",
                  "b.toml")
    assert {c.id for c in cases_of(one)} == {c.id for c in cases_of(other)}
    assert [c.id for c in cases_of(one)] == [c.id for c in cases_of(one)]


def test_a_case_id_depends_on_the_typed_value_not_how_it_is_written(tmp_path: Path) -> None:
    (integer,) = cases_of(write(tmp_path, SHORT + "[[case]]\nrun.set_speed_kph = 90\n", "a.toml"))
    (decimal,) = cases_of(write(tmp_path, SHORT + "[[case]]\nrun.set_speed_kph = 90.0\n", "b.toml"))
    assert integer.id == decimal.id


def test_different_settings_give_different_ids_and_a_duplicate_case_runs_once(tmp_path: Path) -> None:
    path = write(tmp_path, SHORT + """
[matrix]
run.set_speed_kph = [80, 90]
[[case]]
run.set_speed_kph = 80
""")
    cases = cases_of(path)
    assert len(cases) == 2
    assert len({c.id for c in cases}) == 2


def test_random_draws_repeat_with_their_seed_and_change_with_another(tmp_path: Path) -> None:
    draws = "[random]\ncount = 5\nseed = {seed}\nrun.initial_speed_kph = {{uniform = [40, 100]}}\n"
    first = cases_of(write(tmp_path, SHORT + draws.format(seed=1), "a.toml"))
    again = cases_of(write(tmp_path, SHORT + draws.format(seed=1), "b.toml"))
    other = cases_of(write(tmp_path, SHORT + draws.format(seed=2), "c.toml"))
    assert [c.id for c in first] == [c.id for c in again]
    assert not {c.id for c in first} & {c.id for c in other}


def test_any_settings_section_and_key_is_a_campaign_setting(tmp_path: Path) -> None:
    path = write(tmp_path, SHORT + """
[[case]]
truck.mass_kg = 15000
profile.name = "j1939"
faults.inject = ["drop=0.1"]
faults.seed = 7
""")
    (case,) = cases_of(path)
    settings = case.settings()
    assert settings.truck.mass_kg == 15000.0
    assert settings.profile.name == "j1939"
    assert settings.faults.inject == ("drop=0.1",) and settings.faults.seed == 7


# -- a case's row ---------------------------------------------------------------------------------------


def test_a_case_runs_the_simulation_that_simulate_runs(tmp_path: Path) -> None:
    (case,) = cases_of(write(tmp_path, SHORT + "[[case]]\nrun.set_speed_kph = 85\n"))
    row = run_case(case)
    alone = simulation.run(case.settings(), simulation.DriverSetup("ccm"), link="direct")
    assert row["status"] == "ok"
    assert float(row["final_speed_kph"]) == pytest.approx(alone.ecu.state.speed_kph, abs=1e-6)
    assert int(row["ticks"]) == alone.loop.stats.ticks


def test_a_run_that_reaches_its_set_speed_has_a_settle_time_and_errors_within_the_band(
        tmp_path: Path) -> None:
    (case,) = cases_of(write(tmp_path, SHORT + "[[case]]\nrun.set_speed_kph = 85\nrun.grade_pct = 0\n"))
    row = run_case(case)
    assert 0 < float(row["settle_time_s"]) < 60
    assert float(row["error_max_kph"]) <= 1.0  # the default band
    assert float(row["error_rms_kph"]) <= float(row["error_max_kph"])


def test_a_run_that_never_settles_has_no_settle_time(tmp_path: Path) -> None:
    # asked for far more than the truck reaches from standstill in a minute
    text = SHORT + "[[case]]\nrun.set_speed_kph = 200\nrun.initial_speed_kph = 0\n"
    (case,) = cases_of(write(tmp_path, text))
    row = run_case(case)
    assert row["status"] == "ok"
    assert row["settle_time_s"] == "" and row["error_rms_kph"] == ""
    assert float(row["app_at_100_s"]) > 0


def test_faults_in_a_case_act_and_are_counted(tmp_path: Path) -> None:
    (case,) = cases_of(write(tmp_path, SHORT + "[[case]]\nfaults.inject = [\"drop=0.5\"]\n"))
    assert int(run_case(case)["faults_injected"]) > 0


def test_a_case_counts_the_dtcs_its_nodes_raised(tmp_path: Path) -> None:
    text = SHORT + ('[[case]]\nprofile.name = "j1939"\ndriver.mode = "none"\n'
                    '[[case]]\nprofile.name = "j1939"\n')
    coasting, cruising = cases_of(write(tmp_path, text))
    assert run_case(coasting)["dtcs_raised"] == "1", "no APP on the bus: SPN 91 FMI 9 on the ECU, once"
    assert run_case(cruising)["dtcs_raised"] == "0"


def test_a_coastdown_case_has_no_tracking_figures(tmp_path: Path) -> None:
    (case,) = cases_of(write(tmp_path, SHORT + "[[case]]\ndriver.mode = \"none\"\n"))
    row = run_case(case)
    assert row["settle_time_s"] == row["overshoot_kph"] == ""
    assert float(row["wheel_energy_kwh"]) == 0.0
    assert math.isclose(float(row["app_at_0_s"]), 60.0)


# -- the command line -----------------------------------------------------------------------------------


def test_a_failing_case_is_recorded_with_its_error_and_the_others_run(cli_main: Cli, tmp_path: Path) -> None:
    # 300 km/h is beyond the speed signal's range in the DBC: that case fails when it starts
    path = write(tmp_path, SHORT + "[matrix]\nrun.set_speed_kph = [80, 300, 90]\n")
    result = cli_main("campaign", str(path), "--workers", "1", "--out", str(tmp_path / "out"))
    assert result.status == 0, result.err
    rows = table(tmp_path / "out" / "results.csv")
    assert [r["status"] for r in rows] == ["ok", "failed", "ok"]
    assert "set_speed_kph" in rows[1]["error"] and rows[0]["error"] == rows[2]["error"] == ""
    assert "1 failed" in result.out


@pytest.mark.parametrize(("text", "key", "line"), [
    (SHORT + "[matrix]\nrun.set_sped_kph = [80, 90]\n", "set_sped_kph", 5),
    (SHORT + "[matrix]\nrun.set_speed_kph = [80, \"fast\"]\n", "set_speed_kph", 5),
    (SHORT + "[[case]]\nrun.set_speed_kph = 80\n[[case]]\nwheels.count = 6\n", "wheels", 7),
    (SHORT + "[matrix]\nrun.set_speed_kph = 80\n", "set_speed_kph", 5),
    (SHORT + "[random]\ncount = 3\nrun.initial_speed_kph = {normal = [1, 2]}\n", "initial_speed_kph", 6),
    (SHORT + "[matrix]\nrun.set_speed_kph = [80 90]\n", "", 5),
    (SHORT + "[random]\ncount = 2\nseed = 1\nfaults.seed = {integers = [1]}\n", "faults.seed", 7),
])
def test_a_malformed_campaign_file_exits_2_naming_the_key_and_its_line(
        cli_main: Cli, tmp_path: Path, text: str, key: str, line: int) -> None:
    path = write(tmp_path, text)
    result = cli_main("campaign", str(path), "--out", str(tmp_path / "out"))
    assert result.status == 2
    assert key in result.err and f"line {line}" in result.err and str(path) in result.err
    assert not (tmp_path / "out" / "results.csv").exists()


def test_an_existing_table_is_neither_overwritten_nor_resumed_unless_asked(
        cli_main: Cli, tmp_path: Path) -> None:
    path = write(tmp_path, SHORT)
    assert cli_main("campaign", str(path), "--workers", "1", "--out", str(tmp_path / "out")).status == 0
    again = cli_main("campaign", str(path), "--workers", "1", "--out", str(tmp_path / "out"))
    assert again.status == 2 and "--resume" in again.err


def _campaign_with_gain(cli_main: Cli, tmp_path: Path, kp: float, out: str) -> Path:
    """The same campaign file, run with another controller (the INI it names): before and after a change."""
    (tmp_path / "controller.ini").write_text(f"[controller]\nkp = {kp}\n")
    path = write(tmp_path, '[campaign]\nconfig = "controller.ini"\n' + SHORT +
                 "[matrix]\nrun.set_speed_kph = [85, 95]\n")
    result = cli_main("campaign", str(path), "--workers", "1", "--out", str(tmp_path / out))
    assert result.status == 0, result.err
    return tmp_path / out / "results.csv"


def test_compare_exits_0_when_no_figure_got_worse(cli_main: Cli, tmp_path: Path) -> None:
    before = _campaign_with_gain(cli_main, tmp_path, 20.0, "before")
    after = _campaign_with_gain(cli_main, tmp_path, 20.0, "after")
    result = cli_main("campaign", "compare", str(before), str(after))
    assert result.status == 0, result.out
    assert "0 worse" in result.out


def test_compare_exits_1_naming_each_case_and_figure_that_got_worse(cli_main: Cli, tmp_path: Path) -> None:
    before = _campaign_with_gain(cli_main, tmp_path, 20.0, "before")
    after = _campaign_with_gain(cli_main, tmp_path, 2.0, "after")  # a sluggish controller
    result = cli_main("campaign", "compare", str(before), str(after))
    assert result.status == 1
    ids = [row["id"] for row in table(before)]
    worse = [line for line in result.out.splitlines() if line.startswith("worse:")]
    assert worse and all(any(i in line for i in ids) for line in worse)
    assert any("settle_time_s" in line for line in worse)


def test_compare_counts_a_case_missing_from_the_second_table_as_worse(cli_main: Cli, tmp_path: Path) -> None:
    before = _campaign_with_gain(cli_main, tmp_path, 20.0, "before")
    rows = before.read_text().splitlines()
    shorter = tmp_path / "shorter.csv"
    shorter.write_text("\n".join(rows[:-1]) + "\n")
    result = cli_main("campaign", "compare", str(before), str(shorter))
    assert result.status == 1 and "missing" in result.out


def test_compare_writes_the_distributions_as_a_png(cli_main: Cli, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    before = _campaign_with_gain(cli_main, tmp_path, 20.0, "before")
    after = _campaign_with_gain(cli_main, tmp_path, 2.0, "after")
    result = cli_main("campaign", "compare", str(before), str(after), "--png", str(tmp_path / "c.png"))
    assert result.status == 1
    assert (tmp_path / "c.png").read_bytes().startswith(b"\x89PNG")


def test_compare_of_a_file_that_is_no_results_table_exits_2(cli_main: Cli, tmp_path: Path) -> None:
    other = tmp_path / "other.csv"
    other.write_text("t_s,speed_kph\n0,80\n")
    result = cli_main("campaign", "compare", str(other), str(other))
    assert result.status == 2 and "id and status" in result.err


def test_off_a_terminal_progress_is_a_plain_line_a_minute_and_one_at_the_end() -> None:
    from io import StringIO

    from ecu_sim.campaign.progress import CampaignProgress

    now = [0.0]
    out = StringIO()
    progress = CampaignProgress(total=10, already=2, out=out, clock=lambda: now[0])
    for moment in (10.0, 50.0, 61.0, 90.0):
        now[0] = moment
        progress.case_done(failed=moment == 50.0)
    progress.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in out.getvalue()
    assert lines[0].startswith("campaign: 5/10 cases, 1 failed")
    assert lines[1].startswith("campaign: 6/10 cases, 1 failed") and "ETA" in lines[1]


def test_the_example_regression_campaign_is_a_few_hundred_distinct_cases() -> None:
    from tests.conftest import REPO

    cases = cases_of(REPO / "examples" / "regression.toml")
    assert 200 <= len(cases) <= 500
    assert len({case.id for case in cases}) == len(cases)


def test_a_class6_case_counts_the_energy_its_engine_delivered_at_the_wheels(tmp_path: Path) -> None:
    text = SHORT + ('[[case]]\nvehicle.preset = "class6"\n'
                    '[[case]]\nvehicle.preset = "class6"\ndriver.mode = "none"\n')
    cruising, coasting = cases_of(write(tmp_path, text))
    assert float(run_case(cruising)["wheel_energy_kwh"]) > 0.0
    assert float(run_case(coasting)["wheel_energy_kwh"]) == 0.0
