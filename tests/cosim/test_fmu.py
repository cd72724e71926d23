"""``ecu-sim export-fmu``: an FMI 2.0 co-simulation FMU that FMPy, an independent importer, runs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from ecu_sim.vehicle.class6 import Class6Model, Class6Params
from ecu_sim.vehicle.model import TruckModel, TruckState
from ecu_sim.vehicle.params import TruckParams
from tests.conftest import HANG_S, Cli
from tests.vehicle.test_model import closed_form_coastdown_mps, closed_form_stop_time_s

fmpy = pytest.importorskip("fmpy", reason="the 'fmi' extra (pythonfmu, fmpy) is not installed")
numpy = pytest.importorskip("numpy", reason="FMPy's inputs are numpy arrays")
pytest.importorskip("pythonfmu", reason="the 'fmi' extra (pythonfmu, fmpy) is not installed")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fmu(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ecu_sim.fmi.export import export

    return export(str(tmp_path_factory.mktemp("fmu") / "truck.fmu"))


def test_export_fmu_writes_the_file_it_is_given(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("export-fmu", str(tmp_path / "truck.fmu"))
    assert result.status == 0, result.err
    assert (tmp_path / "truck.fmu").is_file()


def test_a_name_without_fmu_exits_2(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("export-fmu", str(tmp_path / "truck.zip"))
    assert result.status == 2 and "must end in .fmu" in result.err


def test_fmpys_validation_of_the_model_description_finds_nothing(fmu: Path) -> None:
    from fmpy.validation import validate_fmu

    assert validate_fmu(str(fmu)) == []


def test_the_fmu_has_pedals_and_grade_in_speed_distance_grade_engine_and_fuel_out_and_every_truck_field(
        fmu: Path) -> None:
    description = fmpy.read_model_description(str(fmu))
    by_causality: dict[str, set[str]] = {}
    for variable in description.modelVariables:
        by_causality.setdefault(variable.causality, set()).add(variable.name)
    assert by_causality["input"] == {"app_pct", "brake_pct", "grade_pct"}
    assert by_causality["output"] == {"speed_kph", "distance_m", "road_grade_pct", "gear", "engine_rpm",
                                      "fuel_rate_lph", "fuel_used_l"}
    assert set(TruckParams.__dataclass_fields__) | {"class6"} <= by_causality["parameter"]
    assert description.coSimulation is not None


def test_fmpys_coastdown_matches_the_closed_form_within_0_01_kph(fmu: Path) -> None:
    stop = round(closed_form_stop_time_s(), 1)
    result = fmpy.simulate_fmu(str(fmu), stop_time=stop, output_interval=0.1,
                               start_values={"initial_speed_kph": 80.0},
                               output=["speed_kph", "distance_m"])
    times, speeds = result["time"], result["speed_kph"]
    assert len(times) > 2000
    worst = max(abs(v - 3.6 * closed_form_coastdown_mps(float(t)))
                for t, v in zip(times, speeds, strict=True))
    assert worst < 0.01


def test_a_parameter_set_in_the_importer_reaches_the_model(fmu: Path) -> None:
    light = fmpy.simulate_fmu(str(fmu), stop_time=10.0, output_interval=1.0,
                              start_values={"mass_kg": 5000.0, "initial_speed_kph": 80.0},
                              output=["speed_kph"])
    heavy = fmpy.simulate_fmu(str(fmu), stop_time=10.0, output_interval=1.0,
                              start_values={"initial_speed_kph": 80.0}, output=["speed_kph"])
    assert light["speed_kph"][-1] < heavy["speed_kph"][-1]  # less inertia, the same road load


def test_the_class6_fmu_burns_the_fuel_the_class6_model_burns(fmu: Path) -> None:
    result = fmpy.simulate_fmu(str(fmu), stop_time=20.0, output_interval=0.1,
                               start_values={"class6": True, "initial_speed_kph": 60.0},
                               input=numpy.array([(0.0, 40.0, 0.0, 1.0)],
                                                 dtype=[("time", float), ("app_pct", float),
                                                        ("brake_pct", float), ("grade_pct", float)]),
                               output=["speed_kph", "gear", "fuel_rate_lph", "fuel_used_l"])
    model = Class6Model(Class6Params())
    state = model.initial(60.0)
    for _ in range(200):
        state = model.step(state, 40.0, 0.0, 0.01 / math.sqrt(1.0001), 0.1)
    # FMPy's step sizes are differences of its output times, a few ulps off 0.1: to the last bits only
    assert result["speed_kph"][-1] == pytest.approx(state.speed_kph, rel=1e-12)
    assert result["fuel_used_l"][-1] == pytest.approx(state.fuel_used_l, rel=1e-12)
    assert result["fuel_rate_lph"][-1] == pytest.approx(state.fuel_rate_lph, rel=1e-12)
    assert result["gear"][-1] == state.gear and state.fuel_used_l > 0.0


def test_the_testbed_fmu_has_no_engine_and_burns_no_fuel(fmu: Path) -> None:
    result = fmpy.simulate_fmu(str(fmu), stop_time=5.0, output_interval=1.0,
                               output=["gear", "fuel_used_l"])
    assert set(result["gear"]) == {0.0} and set(result["fuel_used_l"]) == {0.0}


#: run in a fresh interpreter: ecu_sim may be imported only from an FMU's resources folder
ISOLATED = """
import json, sys
from importlib.machinery import PathFinder

class OnlyTheFmusCopy:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "ecu_sim":
            return None
        spec = PathFinder.find_spec(name, [p for p in sys.path if p.rstrip("/").endswith("resources")])
        if spec is None:
            raise ModuleNotFoundError("ecu_sim is not installed on this host")
        return spec

sys.meta_path.insert(0, OnlyTheFmusCopy)
try:
    import ecu_sim
    before = True
except ImportError:
    before = False
import fmpy
result = fmpy.simulate_fmu(sys.argv[1], stop_time=10.0, output_interval=0.1, output=["speed_kph"])
import ecu_sim
print(json.dumps({"before": before, "speed": float(result["speed_kph"][-1]), "model": ecu_sim.__file__}))
"""


def test_the_fmu_runs_its_own_copy_of_the_model_on_a_host_without_ecu_sim(fmu: Path) -> None:
    done = subprocess.run([sys.executable, "-c", ISOLATED, str(fmu)], capture_output=True, text=True,
                          timeout=HANG_S, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["before"] is False
    assert Path(found["model"]).parent.name == "ecu_sim" and "resources" in Path(found["model"]).parts
    model, state = TruckModel(TruckParams()), TruckState.from_kph(80.0)
    for _ in range(100):
        state = model.step(state, 0.0, 0.0, 0.1)
    assert found["speed"] == state.speed_kph
