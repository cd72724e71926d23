"""The optional extras: ``[all]`` installs every optional feature, and a missing one says how to get it.

A person who meets one missing package tends to meet the next a command later, so each "needs X"
error names the feature's own extra and ``[all]`` (one helper, ecu_sim.errors.needs_extra, words
them all). The errors are triggered through the code that really raises them, with the package
hidden from the import system, so a new wording or a forgotten site shows up here.
"""

from __future__ import annotations

import configparser
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ecu_sim.campaign import compare, executors, results
from ecu_sim.errors import EcuSimError, needs_extra
from ecu_sim.io import mcap_format
from ecu_sim.link import apply
from tests.conftest import REPO, Cli

#: extras that are not features of ecu-sim, and why [all] leaves them out (setup.cfg says the same);
#: a name here that setup.cfg lacks does no harm, so the list may name one before it lands
NOT_IN_ALL = {
    "all": "itself",
    "test": "the checks CI runs",
    "docs": "the tool that builds the documentation site",
    "bench": "scripts/bench's figure only",
    "j1939-peer": "a test peer ecu-sim never imports",
    "systemd": "an sdist that needs libsystemd-dev and a C compiler; sd_notify works without it",
}


def extras() -> dict[str, list[str]]:
    """setup.cfg's extras: name -> its requirement lines."""
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg", encoding="utf-8")
    section = parser["options.extras_require"]
    return {name: [line.strip() for line in section[name].splitlines() if line.strip()]
            for name in section}


def all_extra() -> set[str]:
    """The extras ``all`` names through ``ecu-sim[...]``, the one requirement it may hold."""
    lines = extras()["all"]
    assert len(lines) == 1, lines
    match = re.fullmatch(r"ecu-sim\[([a-z0-9,\- ]+)\]", lines[0])
    assert match, f"'all' must name ecu-sim's own extras, not packages: {lines[0]}"
    return {name.strip() for name in match.group(1).split(",")}


def test_all_names_every_optional_feature_extra_and_nothing_else() -> None:
    features = set(extras()) - set(NOT_IN_ALL)
    assert all_extra() == features


def hide(monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    """Make ``import package`` (and of any of its modules) raise ImportError, as if not installed."""
    for name in [n for n in sys.modules if n == package or n.startswith(f"{package}.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, package, None)


def raised_by(call: Callable[[], object]) -> EcuSimError:
    with pytest.raises(EcuSimError) as caught:
        call()
    return caught.value


def assert_names_extra(message: str, extra: str) -> None:
    assert f"pip install 'ecu-sim[{extra}]'" in message, message
    assert "'ecu-sim[all]'" in message, message
    assert extra in all_extra(), f"{extra!r} is not in [all]"
    assert "Traceback" not in message


def test_the_helper_names_the_extra_all_and_the_way_around() -> None:
    message = needs_extra("reading GPX", "gpxpy", "routes", "or write the route as CSV")
    assert message.startswith("reading GPX needs gpxpy, which is not installed")
    assert message.endswith(", or write the route as CSV")
    assert_names_extra(message, "routes")


# -- through the commands: the exit status is the one the command always had


def test_export_fmu_without_pythonfmu_names_its_extra_and_all(
        cli_main: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hide(monkeypatch, "pythonfmu")
    result = cli_main("export-fmu", str(tmp_path / "truck.fmu"))
    assert result.status == 2
    assert_names_extra(result.err, "fmi")


def test_a_gpx_route_without_gpxpy_names_its_extra_and_all(
        cli_main: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hide(monkeypatch, "gpxpy")
    route = tmp_path / "track.gpx"
    route.write_text("<gpx/>")
    result = cli_main("simulate", "--vehicle", "class6", "--route", str(route), "--duration", "1")
    assert result.status == 2 and str(route) in result.err
    assert_names_extra(result.err, "routes")


def test_plot_without_matplotlib_names_its_extra_and_all(
        cli_main: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = tmp_path / "run.csv"
    assert cli_main("simulate", "--duration", "1", "--out", str(run)).status == 0
    hide(monkeypatch, "matplotlib")
    result = cli_main("plot", str(run), "-o", str(tmp_path / "run.png"))
    assert result.status == 2
    assert_names_extra(result.err, "plot")


def test_driver_device_without_evdev_names_its_extra_and_all(
        cli_main: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "evdev")
    result = cli_main("driver", "--list")
    assert result.status == 69
    assert_names_extra(result.err, "driver")


@pytest.mark.parametrize("package", ["udsoncan", "isotp"])
def test_diag_without_udsoncan_or_can_isotp_names_its_extra_and_all(
        cli_main: Cli, monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    hide(monkeypatch, package)
    result = cli_main("diag", "read", "vin")
    assert result.status == 2
    assert_names_extra(result.err, "diag")


# -- where a command would first run a campaign or open a link: the function that raises


def test_dask_executor_without_distributed_names_its_extra_and_all(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "distributed")
    error = raised_by(lambda: next(executors.dask([], 1, None, None)))
    assert error.exit_status == 2
    assert_names_extra(str(error), "cluster")


def test_parquet_without_pyarrow_names_its_extra_and_all(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hide(monkeypatch, "pyarrow")
    error = raised_by(lambda: results.write_parquet(tmp_path / "r.csv", tmp_path / "r.parquet"))
    assert error.exit_status == 2
    assert_names_extra(str(error), "parquet")


def test_compare_png_without_matplotlib_names_its_extra_and_all(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hide(monkeypatch, "matplotlib")
    error = raised_by(lambda: compare.plot(compare.Report([], []), str(tmp_path / "c.png")))
    assert error.exit_status == 2
    assert_names_extra(str(error), "campaign")


def test_an_mcap_file_without_mcap_names_its_extra_and_all(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hide(monkeypatch, "mcap")
    error = raised_by(lambda: next(mcap_format.messages(str(tmp_path / "run.mcap"), "ticks")))
    assert error.exit_status == 2
    assert_names_extra(str(error), "mcap")
    assert ".log, .asc or .blf" in str(error)


def test_link_without_pyroute2_names_its_extra_and_all(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "pyroute2")
    error = raised_by(lambda: apply.link_state("vcan0"))
    assert error.exit_status == 2
    assert_names_extra(str(error), "link")
