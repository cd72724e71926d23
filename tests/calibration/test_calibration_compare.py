"""A patched calibration beside the original, as ``campaign compare --traces`` judges two versions:
each campaign's cases start from the image its INI file names (``[calibration] engine``), which is
not part of a case's id, so the two tables pair case by case."""

from __future__ import annotations

from pathlib import Path

from ecu_sim.calibration.files import write_image
from ecu_sim.nodes.calibrated import builtin_image
from ecu_sim.settings.model import Settings
from tests.conftest import Cli

CASES = """
[base]
run.duration_s = 8
run.initial_speed_kph = 80
run.set_speed_kph = 90
vehicle.preset = "class6"
profile.name = "j1939"
j1939.network = "powertrain"

[matrix]
run.grade_pct = [0, 2]
"""


def _engine_image(folder: Path, name: str, changes: dict[str, float], calibration_id: str) -> Path:
    path = folder / f"{name}.s19"
    write_image(builtin_image("engine", Settings()).changed(changes, calibration_id), path)
    return path


def _campaign(folder: Path, name: str, image: Path | None) -> Path:
    head = "[campaign]\n"
    if image is not None:
        (folder / f"{name}.ini").write_text(f"[calibration]\nengine = {image}\n", encoding="utf-8")
        head += f'config = "{name}.ini"\n'
    path = folder / f"{name}.toml"
    path.write_text(head + CASES, encoding="utf-8")
    return path


def _compare(cli_main: Cli, folder: Path, image: Path) -> str:
    tables = []
    for name, given in (("original", None), ("patched", image)):
        out = folder / name
        result = cli_main("campaign", str(_campaign(folder, name, given)), "--workers", "1",
                          "--keep-traces", "--out", str(out))
        assert result.status == 0, result.err
        tables.append(str(out / "results.csv"))
    result = cli_main("campaign", "compare", *tables, "--traces")
    return result.out


def test_a_patched_calibration_with_the_same_values_drives_the_same(cli_main: Cli, tmp_path: Path) -> None:
    image = _engine_image(tmp_path, "renamed", {}, "PATCHED-SAME")
    assert "2 cases: 2 same, 0 differs, 0 inconclusive" in _compare(cli_main, tmp_path, image)


def test_a_patched_calibration_with_a_lower_road_speed_limit_drives_differently(cli_main: Cli,
                                                                               tmp_path: Path) -> None:
    image = _engine_image(tmp_path, "slow", {"road_speed_limit_kph": 60.0}, "PATCHED-SLOW")
    assert "2 cases: 0 same, 2 differs, 0 inconclusive" in _compare(cli_main, tmp_path, image)
