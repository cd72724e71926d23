"""The CCM as a production longitudinal controller (``--command tsc1``): TSC1 to the engine and XBR
to the brakes instead of the pedals, on the class6 truck's powertrain network, in virtual time.

The frames the CCM sends are read off the bus by the test and decoded with cantools; their
checksums are computed here from J1939-71's formulas, not by ecu-sim's code.
"""

from __future__ import annotations

import csv
import importlib.resources
import itertools
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import can
import cantools
import pytest
from cantools.database.can import Database

from ecu_sim.bus.port import Port
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.commands import command_codecs, rate_field
from ecu_sim.nodes.driver import Driver
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.factory import NodeKind, build_node
from ecu_sim.pedals.reading import PedalReading
from ecu_sim.runs.prepare import load_route, prepare
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.runtime.loop import TickLoop
from ecu_sim.settings.model import CcmSettings, ProfileSettings, RunSettings, Settings, VehicleSettings
from tests.conftest import Cli, Node, Udp, run_cli
from tests.helpers.driverrig import Script

CCM_SA = 0x11
TSC1_PGN, XBR_PGN, EEC2_PGN = 0, 1024, 61443


def database() -> Database:
    db = cantools.database.load_string(
        (importlib.resources.files("ecu_sim.dbc") / "j1939.dbc").read_text(encoding="utf-8"), "dbc")
    assert isinstance(db, Database)
    return db


def tsc1_checksum(data: bytes, arbitration_id: int) -> int:
    total = sum(data[:7]) + (data[7] & 0x0F) + sum(arbitration_id.to_bytes(4, "big"))
    return (((total >> 6) & 3) + (total >> 3) + total) & 7


def xbr_checksum(data: bytes, arbitration_id: int) -> int:
    total = sum(data[:7]) + (data[7] & 0x0F) + sum(arbitration_id.to_bytes(4, "big"))
    return ((total >> 4) + total) & 0x0F


def pgn(arbitration_id: int) -> int:
    value = (arbitration_id >> 8) & 0x3FFFF
    return value & 0x3FF00 if (value >> 8) & 0xFF < 240 else value


# -- the frames, against the standard's worked examples ---------------------------------------------


def test_tsc1_from_0x2a_encodes_as_the_standards_worked_frame() -> None:
    tsc1, _ = command_codecs(database(), 0x2A)
    frame = tsc1.encode({695: 2, 696: 0, 897: 3, 3349: 7, 3350: 31}, {518: 40.0}, 0)
    assert (tsc1.frame_id, frame.hex(" ")) == (0x0C00002A, "f2 ff ff a5 ff ff ff 40")


def test_xbr_from_0x2a_encodes_as_the_standards_worked_frame() -> None:
    _, xbr = command_codecs(database(), 0x2A)
    frame = xbr.encode({2914: 2, 2915: 2, 2916: 2}, {2920: -2.0}, 0)
    assert (xbr.frame_id, frame.hex(" ")) == (0x0C040B2A, "7f 6d ea ff ff ff ff 80")


@pytest.mark.parametrize(("period_s", "field"),
                         [(0.01, 7), (0.02, 6), (0.03, 5), (0.1, 4), (0.2, 3), (1.0, 0)])
def test_tsc1_declares_the_fastest_standard_rate_not_faster_than_its_loop(
        period_s: float, field: int) -> None:
    assert rate_field(period_s) == field


def test_tsc1_cannot_declare_a_loop_slower_than_one_second() -> None:
    assert rate_field(1.5) is None


def test_tsc1_on_a_dbc_without_tsc1_and_xbr_exits_2_naming_the_profile_that_has_them(cli_main: Cli) -> None:
    result = cli_main("ccm", "-i", "virtual", "-c", f"ecu-sim-tsc1-{uuid.uuid4().hex[:12]}", "--command",
                      "tsc1", "--duration", "1")  # the amp profile
    assert result.status == 2 and "--profile j1939" in result.err, result.err


def test_a_simulation_of_tsc1_without_the_powertrain_that_takes_it_exits_2(cli_main: Cli) -> None:
    result = cli_main("simulate", "--vehicle", "class6", "--profile", "j1939", "--command", "tsc1",
                      "--duration", "1")
    assert result.status == 2 and "--network powertrain" in result.err, result.err


def test_faults_in_a_ccm_that_sends_no_app_exit_2(cli_main: Cli) -> None:
    result = cli_main("ccm", "-i", "virtual", "-c", f"ecu-sim-tsc1-{uuid.uuid4().hex[:12]}", "--profile",
                      "j1939", "--command", "tsc1", "--fault", "drop=0.1", "--duration", "1")
    assert result.status == 2 and "--command app" in result.err, result.err


# -- the closed loop through the command line -------------------------------------------------------


def simulate(cli_main: Cli, tmp_path: Path, command: str, *args: str) -> list[dict[str, float]]:
    out = tmp_path / f"{command}.csv"
    result = cli_main("simulate", "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                      "--command", command, "--out", str(out), *args)
    assert result.status == 0, result.err
    return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(out.open())]


def settled_after(rows: list[dict[str, float]], set_kph: float, band: float) -> float:
    """The time after which the speed stays within ``band`` of the set speed."""
    outside = [r["t_s"] for r in rows if abs(r["speed_kph"] - set_kph) > band]
    return outside[-1] if outside else 0.0


def test_tsc1_holds_the_set_speed_as_the_pedal_does_80_to_90_kph_on_the_flat(
        cli_main: Cli, tmp_path: Path) -> None:
    args = ("--grade", "0", "--initial-speed", "80", "--set-speed", "90", "--duration", "180")
    app, tsc1 = simulate(cli_main, tmp_path, "app", *args), simulate(cli_main, tmp_path, "tsc1", *args)
    app_settled, tsc1_settled = settled_after(app, 90.0, 0.5), settled_after(tsc1, 90.0, 0.5)
    assert tsc1_settled < 120.0, f"TSC1 settles within 0.5 km/h after {tsc1_settled} s (APP: {app_settled} s)"
    assert tsc1_settled < 2.0 * app_settled + 10.0
    late = [r["speed_kph"] for r in tsc1 if r["t_s"] >= 150.0]
    assert max(abs(v - 90.0) for v in late) < 0.5
    assert max(r["speed_kph"] for r in tsc1) < 90.0 + 2.0  # overshoot


def test_tsc1_and_xbr_hold_the_set_speed_down_a_5_pct_descent(cli_main: Cli, tmp_path: Path) -> None:
    rows = simulate(cli_main, tmp_path, "tsc1", "--grade", "-5", "--initial-speed", "60", "--set-speed", "60",
                    "--duration", "120")
    assert all(r["speed_kph"] < 60.0 + 5.0 for r in rows)  # unbraked, it runs away past 110 km/h


# -- the frames on the bus ----------------------------------------------------------------------------


class Bench:
    """A class6 ECU, the CCM with ``--command tsc1`` and a driver on a virtual bus, and an ear: what
    the CCM sends is looked at here (the single-node ECU does not act on it; the closed loop with the
    powertrain is the command line's tests above)."""

    def __init__(self, run: RunSettings) -> None:
        settings = Settings(profile=ProfileSettings(name="j1939"), vehicle=VehicleSettings(preset="class6"),
                            run=run, ccm=CcmSettings(command="tsc1"))
        self.settings, self.profile = prepare(settings)
        self.channel = f"ecu-sim-tsc1-{uuid.uuid4().hex[:12]}"
        self.buses: list[can.BusABC] = []
        self.script = Script()
        self.nodes = [self._build(kind) for kind in (NodeKind.ECU, NodeKind.CCM, NodeKind.DRIVER)]
        self.ear = can.Bus(interface="virtual", channel=self.channel, receive_own_messages=False)
        self.loop = TickLoop(VirtualClock(), self.settings.run.resolved_period_s, self.nodes)

    def _build(self, kind: NodeKind) -> Ecu | Ccm | Driver:
        bus = can.Bus(interface="virtual", channel=self.channel, receive_own_messages=False)
        self.buses.append(bus)
        port = Port(bus, kind.frame_ids(self.profile, self.settings))
        route = load_route(self.settings) if kind is NodeKind.ECU else None
        return build_node(kind, port, self.profile, self.settings, route=route, pedals=self.script).node

    @property
    def ccm(self) -> Ccm:
        node = self.nodes[1]
        assert isinstance(node, Ccm)
        return node

    def run(self, seconds: float) -> list[can.Message]:
        """Run ``seconds``; the CCM's TSC1, XBR and EEC2 frames of that time."""
        self.loop.run(round(seconds / self.settings.run.resolved_period_s))
        heard = []
        while (msg := self.ear.recv(0.0)) is not None:
            if msg.is_extended_id and msg.arbitration_id & 0xFF == CCM_SA and \
                    pgn(msg.arbitration_id) in (TSC1_PGN, XBR_PGN, EEC2_PGN):
                heard.append(msg)
        return heard

    def close(self) -> None:
        for bus in (*self.buses, self.ear):
            bus.shutdown()


@pytest.fixture
def bench() -> Iterator[Bench]:
    bench = Bench(RunSettings(initial_speed_kph=80.0, set_speed_kph=90.0, grade_pct=0.0))
    yield bench
    bench.close()


def decoded(frames: list[can.Message], wanted: int) -> list[tuple[can.Message, dict[str, float]]]:
    db = database()
    message = next(m for m in db.messages if pgn(m.frame_id) == wanted)
    found = []
    for msg in frames:
        if pgn(msg.arbitration_id) == wanted:
            values = message.decode(bytes(msg.data), decode_choices=False)
            assert isinstance(values, dict)
            found.append((msg, {k: float(v) for k, v in values.items() if isinstance(v, (int, float))}))
    return found


def test_the_ccms_tsc1_is_torque_control_at_cruise_priority_with_a_true_counter_and_checksum(
        bench: Bench) -> None:
    tsc1 = decoded(bench.run(10.0), TSC1_PGN)
    assert len(tsc1) > 50
    for msg, values in tsc1:
        assert msg.arbitration_id == 0x0C000011  # priority 3, to the engine 0x00, from the CCM 0x11
        assert values["MessageChecksum"] == tsc1_checksum(bytes(msg.data), msg.arbitration_id)
        modes = (values["EngOverrideCtrlMode"], values["OverrideCtrlModePriority"], values["TSC1CtrlPurpose"])
        assert modes == (2, 3, 1)
        assert values["TSC1TransmissionRate"] == rate_field(bench.settings.run.resolved_period_s)
        assert 0.0 <= values["EngRqedTorque_TorqueLimit"] <= 100.0
    counters = [int(values["MessageCounter"]) for _, values in tsc1]
    assert all(b == (a + 1) % 8 for a, b in itertools.pairwise(counters))


def test_the_ccms_xbr_has_a_true_counter_and_checksum_and_asks_nothing_on_the_flat(bench: Bench) -> None:
    xbr = decoded(bench.run(10.0), XBR_PGN)
    assert len(xbr) > 50
    for msg, values in xbr:
        assert msg.arbitration_id == 0x0C040B11  # priority 3, to the brakes 0x0B, from the CCM 0x11
        assert values["XBRMessageChecksum"] == xbr_checksum(bytes(msg.data), msg.arbitration_id)
        assert values["XBRCtrlMode"] == 0  # override disabled: below the set speed, no brake request
    counters = [int(values["XBRMessageCounter"]) for _, values in xbr]
    assert all(b == (a + 1) % 16 for a, b in itertools.pairwise(counters))
    assert len(set(counters)) == 16


def test_the_app_of_a_ccm_commanding_by_tsc1_is_the_drivers_pedal_alone(bench: Bench) -> None:
    frames = bench.run(10.0)
    tsc1, app = decoded(frames, TSC1_PGN), decoded(frames, EEC2_PGN)
    assert max(values["EngRqedTorque_TorqueLimit"] for _, values in tsc1) > 10.0
    assert app and {values["AccelPedalPos1"] for _, values in app} == {0.0}  # no driver on the bus


def test_a_tsc1_ccm_slower_than_xbrs_20_ms_warns_that_brakes_may_time_its_stream_out(
        caplog: pytest.LogCaptureFixture) -> None:
    Bench(RunSettings(period_s=0.1)).close()
    assert "XBR every 0.1 s" in caplog.text


def test_the_drivers_pedal_above_the_demand_releases_the_engine_and_reaches_it_in_app() -> None:
    bench = Bench(RunSettings(initial_speed_kph=80.0, set_speed_kph=60.0, grade_pct=0.0))  # demand 0 %
    try:
        bench.run(2.0)
        bench.script.now = PedalReading(app_pct=30.0)
        frames = bench.run(1.0)
        assert bench.ccm.override
        assert decoded(frames, TSC1_PGN)[-1][1]["EngOverrideCtrlMode"] == 0
        assert decoded(frames, EEC2_PGN)[-1][1]["AccelPedalPos1"] == 30.0
    finally:
        bench.close()


def test_the_driver_braking_makes_the_ccm_release_the_engine_with_override_disabled(bench: Bench) -> None:
    bench.run(10.0)
    bench.script.now = PedalReading(brake_pct=40.0)
    released = decoded(bench.run(1.0), TSC1_PGN)
    assert not bench.ccm.engaged
    assert released and released[-1][1]["EngOverrideCtrlMode"] == 0


# -- a real ccm process against a real powertrain, its recording read back -----------------------------


@pytest.mark.slow
def test_a_recording_of_ccm_command_tsc1_decodes_with_true_checksums_and_replays_bit_for_bit(
        start: Callable[..., Node], udp: Udp, tmp_path: Path) -> None:
    truck = start(*udp.args(), "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                  "--grade", "0")
    truck.wait_for(r"speed +\d")
    record = tmp_path / "ccm.log"
    ccm = start("ccm", *udp.args(), "--vehicle", "class6", "--profile", "j1939", "--command", "tsc1",
                "--record", str(record), "--duration", "5")
    assert ccm.wait() == 0, ccm.log
    assert truck.stop() == 0, truck.log
    assert not re.search(r"(tsc1|xbr)_(checksum|counter)", truck.log), "the truck refused its frames"
    sent = [msg for msg in can.LogReader(str(record)) if msg.is_extended_id and not msg.is_rx]
    tsc1, xbr = decoded(sent, TSC1_PGN), decoded(sent, XBR_PGN)
    assert len(tsc1) >= 10 and len(xbr) >= 10, f"{len(tsc1)} TSC1 and {len(xbr)} XBR frames"
    assert all(v["MessageChecksum"] == tsc1_checksum(bytes(m.data), m.arbitration_id) for m, v in tsc1)
    assert all(v["XBRMessageChecksum"] == xbr_checksum(bytes(m.data), m.arbitration_id) for m, v in xbr)
    assert {v["TSC1TransmissionRate"] for _, v in tsc1} == {6}  # 20 ms, XBR's rate, by default
    modes = [v["EngOverrideCtrlMode"] for _, v in tsc1]
    assert modes[-2] == 2 and set(modes) <= {0, 2}  # torque control once it hears the speed, then release
    replayed = run_cli("replay", str(record))
    assert replayed.returncode == 0 and "bit for bit" in replayed.stdout, replayed.stdout + replayed.stderr


@pytest.mark.slow
def test_a_tsc1_ccm_stopped_by_sigterm_releases_the_engine_and_the_brakes_with_override_disabled(
        start: Callable[..., Node], udp: Udp, tmp_path: Path) -> None:
    truck = start(*udp.args(), "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                  "--grade", "0")
    truck.wait_for(r"speed +\d")
    record = tmp_path / "ccm.log"
    ccm = start("ccm", *udp.args(), "--vehicle", "class6", "--profile", "j1939", "--command", "tsc1",
                "--record", str(record))
    ccm.wait_for(r"TSC1 +\d")  # torque control: it heard the speed and drives
    assert ccm.stop() == 0, ccm.log
    truck.wait_for(r"speed +\d")  # a status line after the CCM went, a second later
    truck.wait_for(r"speed +\d")
    assert truck.stop() == 0, truck.log
    sent = [msg for msg in can.LogReader(str(record)) if msg.is_extended_id and not msg.is_rx]
    tsc1, xbr = decoded(sent, TSC1_PGN), decoded(sent, XBR_PGN)
    assert tsc1[-2][1]["EngOverrideCtrlMode"] == 2 and tsc1[-1][1]["EngOverrideCtrlMode"] == 0
    assert xbr[-1][1]["XBRCtrlMode"] == 0
    assert "lost control" not in truck.log


@pytest.mark.slow
def test_an_mcap_recording_of_a_tsc1_ccm_replays_its_release_bit_for_bit(
        start: Callable[..., Node], udp: Udp, tmp_path: Path) -> None:
    pytest.importorskip("mcap")
    truck = start(*udp.args(), "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                  "--grade", "0")
    truck.wait_for(r"speed +\d")
    record = tmp_path / "ccm.mcap"
    ccm = start("ccm", *udp.args(), "--vehicle", "class6", "--profile", "j1939", "--command", "tsc1",
                "--record", str(record), "--duration", "3")
    assert ccm.wait() == 0, ccm.log
    assert truck.stop() == 0, truck.log
    replayed = run_cli("replay", str(record))
    assert replayed.returncode == 0 and "bit for bit" in replayed.stdout, replayed.stdout + replayed.stderr
