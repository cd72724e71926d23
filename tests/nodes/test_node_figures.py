"""One way to read a node's figures: every node kind says what it has, and every reader (the status
line, the trace CSV, the signals file's groups, the page) picks by name from that, never by asking
which class the node is."""

from __future__ import annotations

import ast
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from ecu_sim.io.signals import node_counters, node_state
from ecu_sim.io.trace import COLUMNS, CsvTrace, StateHashTrace, columns
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.driver import Driver
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.figures import Figure, Figured, status_text
from ecu_sim.nodes.pedal import ConstantPedal
from ecu_sim.runs.simulation import DriverSetup, Simulation
from ecu_sim.settings.j1939 import J1939Settings
from ecu_sim.settings.model import ProfileSettings, RunSettings, Settings, VehicleSettings
from ecu_sim.web.state import PAGE_FIGURES, node_figures
from tests.helpers.driverrig import Rig

PACKAGE = Path(__file__).resolve().parents[2] / "ecu_sim"
#: the modules that define node classes: only the factory and the runs that build nodes import them
NODE_MODULES = {"ecu_sim.nodes.ecu", "ecu_sim.nodes.ccm", "ecu_sim.nodes.driver", "ecu_sim.nodes.pedal",
                "ecu_sim.nodes.input"}
NODE_CLASSES = {"Ecu", "Ccm", "Driver", "ConstantPedal", "InputNode"}
#: name endings that carry a unit, and the unit they carry
UNITS = {"_kph": "km/h", "_pct": "%", "_m": "m", "_rpm": "rpm", "_mps2": "m/s2", "_lph": "L/h", "_l": "L"}

CLASS6 = Settings(profile=ProfileSettings(name="j1939"), vehicle=VehicleSettings(preset="class6"),
                  run=RunSettings(initial_speed_kph=0.0, set_speed_kph=60.0))
POWERTRAIN = Settings(profile=ProfileSettings(name="j1939"), vehicle=VehicleSettings(preset="class6"),
                      j1939=J1939Settings(network="powertrain"),
                      run=RunSettings(initial_speed_kph=0.0, set_speed_kph=60.0))


@pytest.fixture(params=["testbed", "class6", "powertrain", "pedal"])
def simulation(request: pytest.FixtureRequest) -> Iterator[Simulation]:
    settings = {"testbed": Settings(), "class6": CLASS6, "powertrain": POWERTRAIN, "pedal": Settings()}
    driver = DriverSetup("pedal", 30.0) if request.param == "pedal" else DriverSetup("ccm")
    with Simulation(settings[request.param], driver) as sim:
        sim.loop.run(20)
        yield sim


def nodes_of(sim: Simulation) -> list[Figured]:
    """The ECU and its driver: the CCM, or the constant pedal."""
    driver = sim.ccm if sim.ccm is not None else sim.loop.nodes[1]
    assert isinstance(driver, Ccm | ConstantPedal)
    return [sim.ecu, driver]


def assert_said_with_units(figures: tuple[Figure, ...]) -> None:
    names = [figure.name for figure in figures]
    assert len(names) == len(set(names)), names
    for figure in figures:
        assert isinstance(figure, Figure) and figure.name and isinstance(figure.unit, str)
        for ending, unit in UNITS.items():
            if figure.name.endswith(ending):
                assert figure.unit == unit, figure


def test_every_node_kind_says_its_figures_with_units(simulation: Simulation, tmp_path: Path) -> None:
    for node in nodes_of(simulation):
        figures = node.figures()
        assert figures and "app_pct" in {figure.name for figure in figures}
        assert_said_with_units(figures)
    rig = Rig(tmp_path, with_ccm=False, initial_speed_kph=50.0)
    try:
        rig.script.tap("resume")
        rig.run(1.0)
        driver = rig.nodes[-1]
        assert isinstance(driver, Driver)
        assert_said_with_units(driver.figures())
        assert node_state(driver).keys() == {"app_pct", "brake_pct", "speed_kph"}
    finally:
        rig.close()


def test_the_signals_groups_and_the_page_are_the_figures_by_name(simulation: Simulation) -> None:
    for node in nodes_of(simulation):
        said = {figure.name: figure.value for figure in node.figures()}
        state = node_state(node)
        assert all(said[name] is value or said[name] == value for name, value in state.items())
        page = node_figures(node)
        assert list(page) == list(PAGE_FIGURES)
        assert all(page[name] in (said.get(name), None) for name in PAGE_FIGURES)
    counters = node_counters(simulation.ecu)
    assert counters["tx"] == simulation.ecu.port.counters.tx and "overruns" in counters


def test_a_node_says_the_same_figures_in_the_same_order_at_every_tick() -> None:
    with Simulation(POWERTRAIN, DriverSetup("ccm")) as sim:
        assert sim.ccm is not None
        before = [[figure.name for figure in node.figures()] for node in (sim.ecu, sim.ccm)]
        sim.loop.run(30)
        assert [[figure.name for figure in node.figures()] for node in (sim.ecu, sim.ccm)] == before


def test_the_csv_columns_come_from_the_figures_the_node_has(simulation: Simulation) -> None:
    ecu = simulation.ecu
    out = io.StringIO()
    trace = CsvTrace(out, ecu)
    trace.on_tick(0, 0.0, True)
    header, row = out.getvalue().splitlines()
    said = {figure.name for figure in ecu.figures()}
    assert header.split(",")[1:] == [name for name, _ in columns(ecu)]
    assert {name for name, _ in columns(ecu)} <= said
    assert len(row.split(",")) == len(header.split(","))
    has_driveline = ecu.vehicle.driveline() is not None
    assert ("gear" in header) == has_driveline
    assert ("torque_mode" in header) == (ecu.powertrain is not None)


class _Said:
    """Any object that says figures: the CSV does not care what it is."""

    def __init__(self, *names: str) -> None:
        self._figures = tuple(Figure(name, "", 1.0) for name in names)

    def figures(self) -> tuple[Figure, ...]:
        return self._figures


def test_a_column_group_is_written_only_when_every_figure_of_it_is_said() -> None:
    base = [name for name, _ in COLUMNS[0]]
    out = io.StringIO()
    CsvTrace(out, _Said(*base, "gear", "brake_pct"))
    assert out.getvalue() == "t_s,speed_kph,app_pct,grade_pct,distance_m\n"
    everything = [name for group in COLUMNS for name, _ in group]
    assert [name for name, _ in columns(_Said(*reversed(everything)))] == everything


def test_the_status_line_shows_the_figures_it_names_in_its_order() -> None:
    figures = (Figure("b", "%", 2.0, shown="b {:.1f} %"), Figure("a", "", None, shown="a missing"),
               Figure("c", "", 3.0), Figure("d", "", 1.0, shown=""))
    assert status_text(figures, ("a", "b", "c", "d", "e")) == "a missing | b 2.0 %"


def test_the_state_hash_reads_the_unrounded_floats(simulation: Simulation) -> None:
    ecu = simulation.ecu
    state = ecu.vehicle.state
    assert ecu.state_bits() == (state.speed_mps, state.distance_m, ecu.app_pct, ecu.grade_pct)
    out = io.StringIO()
    StateHashTrace(out, ecu).on_tick(7, 0.0, True)
    assert out.getvalue().startswith("7 ")


def test_a_run_with_no_reader_builds_no_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(self: object) -> tuple[Figure, ...]:
        raise AssertionError("figures built with no reader attached")

    monkeypatch.setattr(Ecu, "figures", refused)
    with Simulation(POWERTRAIN, DriverSetup("ccm")) as sim:
        sim.loop.run(50)


def _reader_modules() -> list[Path]:
    return sorted([*(PACKAGE / "io").glob("*.py"), *(PACKAGE / "web").glob("*.py")])


@pytest.mark.parametrize("path", _reader_modules(), ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_reader_imports_a_node_class_or_asks_which_class_a_node_is(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module not in NODE_MODULES, f"{path.name} imports {node.module}"
            assert not {alias.name for alias in node.names} & NODE_CLASSES, path.name
        elif isinstance(node, ast.Import):
            assert not {alias.name for alias in node.names} & NODE_MODULES, path.name
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "isinstance", "getattr"):
            named = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            assert not named & NODE_CLASSES, f"{path.name}:{node.lineno}"
            if node.func.id == "getattr":
                assert not (isinstance(node.args[0], ast.Name) and node.args[0].id == "node"), \
                    f"{path.name}:{node.lineno}"
