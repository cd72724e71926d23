"""``ecu-sim driver``: what the driver node puts on the bus, the keyboard pedal, and the command line.

The node runs on a private python-can virtual bus in virtual time with a scripted source; the
keys are decoded from the bytes a terminal sends; the command is run through ``main``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import can
import pytest

from ecu_sim.bus.port import Port
from ecu_sim.cli import build_parser
from ecu_sim.codec.profile import Profile
from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import FaultSchedule, parse_fault
from ecu_sim.nodes.factory import NodeKind, build_node
from ecu_sim.pedals.keyboard import KeyPedal, decode
from ecu_sim.pedals.reading import Calibration, PedalReading
from ecu_sim.runs.prepare import prepare
from ecu_sim.runs.realtime import run_realtime
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.runtime.loop import TickLoop
from ecu_sim.settings.load import load
from ecu_sim.settings.model import DriverSettings, ProfileSettings, Settings
from tests.conftest import Cli
from tests.helpers.driverrig import Script, dbc_with_brake

#: j1939 profile: EEC2 (APP), EBC1 (brake, added by the rig's DBC), CCVS2 (cruise commands),
#: each under the driver's default source address 0x31
APP_ID, BRAKE_ID, COMMANDS_ID = 0x0CF00331, 0x18F00131, 0x0C0A1131


class Wire:
    """The driver node alone on a bus, and a listener that keeps every frame it sends."""

    def __init__(self, dbc: str | None, profile: str = "j1939", driver_source: int = 0x31,
                 faults: tuple[str, ...] = ()) -> None:
        settings = Settings(profile=ProfileSettings(name=profile, dbc=dbc),
                            driver=DriverSettings(driver_source=driver_source))
        self.settings, self.profile = prepare(settings, "app")
        channel = f"driver-test-{id(self)}"
        self.bus = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
        self.listener = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
        self.script = Script()
        port = Port(self.bus, NodeKind.DRIVER.frame_ids(self.profile, self.settings))
        schedule = FaultSchedule(tuple(parse_fault(f) for f in faults), 0)
        self.node = build_node(NodeKind.DRIVER, port, self.profile, self.settings, schedule=schedule,
                               pedals=self.script).node
        self.loop = TickLoop(VirtualClock(), self.settings.run.resolved_period_s, [self.node])

    def frames(self) -> list[can.Message]:
        found = []
        while (msg := self.listener.recv(0.0)) is not None:
            found.append(msg)
        return found

    def close(self) -> None:
        self.bus.shutdown()
        self.listener.shutdown()


@pytest.fixture
def wire(tmp_path: Path) -> Iterator[Wire]:
    w = Wire(dbc_with_brake(tmp_path))
    yield w
    w.close()


def of(frames: list[can.Message], ident: int) -> list[can.Message]:
    return [f for f in frames if f.arbitration_id == ident]


def test_app_is_sent_under_the_drivers_source_address_at_the_dbcs_cycle_time(wire: Wire) -> None:
    wire.script.now = PedalReading(app_pct=42.0)
    wire.loop.run(20)
    frames = wire.frames()

    assert wire.settings.run.resolved_period_s == 0.05, "EEC2's GenMsgCycleTime in the j1939 profile"
    apps = of(frames, APP_ID)
    assert len(apps) == 20
    assert {f.data[1] for f in apps} == {105}, "42 % at 0.4 %/bit, byte 1"


def test_brake_is_sent_at_its_own_cycle_time(wire: Wire) -> None:
    wire.script.now = PedalReading(brake_pct=60.0)
    wire.loop.run(20)
    brakes = of(wire.frames(), BRAKE_ID)

    assert len(brakes) == 10, "EBC1 every 100 ms, every second tick of 50 ms"
    assert {f.data[1] for f in brakes} == {150}, "60 % at 0.4 %/bit, byte 1"


def test_a_button_tapped_between_two_frames_of_its_message_is_sent_in_the_next_three(wire: Wire) -> None:
    wire.loop.run(1)  # CCVS2 every second tick: at ticks 0, 2, 4, ...
    wire.script.tap("resume")  # read at tick 1
    wire.loop.run(8)
    commands = [f.data[0] & 0x0F for f in of(wire.frames(), COMMANDS_ID)]

    assert commands == [0b0000, 0b0100, 0b0100, 0b0100, 0b0000], "resume (bits 2-3) = 01, cancel 00"


def test_faults_act_on_the_drivers_app(tmp_path: Path) -> None:
    w = Wire(None, profile="amp", faults=("offset=+10@0.2", "silent@0.4"))
    w.script.now = PedalReading(app_pct=30.0)
    w.loop.run(6)
    frames = w.frames()
    w.close()

    assert [f.data[6] - 125 for f in frames] == [30, 30, 40, 40], "+10 % from 0.2 s, nothing from 0.4 s"


def test_the_driver_source_address_is_configurable(tmp_path: Path) -> None:
    w = Wire(None, driver_source=0x05)
    w.loop.run(1)
    frames = w.frames()
    w.close()

    assert [f.arbitration_id for f in frames] == [0x0CF00305, 0x18F00105, 0x0C0A1105], "APP, EBC1, CCVS2"


def test_a_dbc_without_brake_and_commands_sends_app_only() -> None:
    w = Wire(None, profile="amp")
    w.script.now = PedalReading(app_pct=30.0, brake_pct=50.0, resume=True)
    w.loop.run(2)
    frames = w.frames()
    w.close()

    assert [(f.arbitration_id, f.data[6]) for f in frames] == [(0x18F00331, 155)] * 2


def test_the_driver_needs_a_j1939_app_message_to_carry_its_source_address(tmp_path: Path) -> None:
    dbc = tmp_path / "plain.dbc"
    text = (Path(Profile.load("amp").dbc_path)).read_text()
    dbc.write_text(text.replace('BA_ "VFrameFormat" BO_ 2565866278 3;',
                                'BA_ "VFrameFormat" BO_ 2565866278 1;')
                   .replace('BA_ "ProtocolType" "J1939";', ''))
    settings, profile = prepare(Settings(profile=ProfileSettings(dbc=str(dbc))), "app")

    with pytest.raises(ConfigError, match="not a J1939 parameter group"):
        NodeKind.DRIVER.frame_ids(profile, settings)


# ---- calibration and keys


def test_calibration_reads_a_pedal_that_counts_down() -> None:
    pedal = Calibration(released=1023, pressed=0)
    assert [pedal.percent(raw) for raw in (1023, 0, 2000, -5)] == [0.0, 100.0, 0.0, 100.0]
    assert pedal.percent(767) == pytest.approx(25.0, abs=0.1)


@pytest.mark.parametrize(("data", "keys"), [
    (b"\x1b[A", ["up"]),
    (b"\x1b[B\x1b[B", ["down", "down"]),
    (b"\x1bOA", ["up"]),  # application cursor mode
    (b"\x1b[1;5A", ["up"]),  # with a modifier (Ctrl+up)
    (b"rcb 0m", ["resume", "cancel", "brake", "brake", "release", "full"]),
    (b"\x1b[15~x\x1bq", []),  # F5, an unknown letter, Alt+q
])
def test_keys_are_decoded_from_what_a_terminal_sends(data: bytes, keys: list[str]) -> None:
    assert decode(data) == (keys, b"")


@pytest.mark.parametrize("cut", [1, 2])
def test_an_arrow_split_across_two_reads_is_decoded_once_complete(cut: int) -> None:
    first, rest = decode(b"r\x1b[A"[: 1 + cut])
    assert first == ["resume"]
    assert decode(rest + b"\x1b[A"[cut:]) == (["up"], b"")


def test_arrow_keys_step_the_pedal_within_0_and_100_percent() -> None:
    pedal = KeyPedal(step_pct=40.0, press_reads=1)
    for key in ("up", "up", "up"):
        pedal.press(key)
    assert pedal.read().app_pct == 100.0
    for key in ("down", "down", "down"):
        pedal.press(key)
    assert pedal.read().app_pct == 0.0


def test_a_key_holds_the_brake_for_press_reads_reads() -> None:
    pedal = KeyPedal(step_pct=5.0, press_reads=3)
    pedal.press("brake")
    assert [pedal.read().brake_pct for _ in range(4)] == [100.0, 100.0, 100.0, 0.0]


# ---- the command line


def test_driver_without_evdev_names_the_extra_to_install(cli_main: Cli,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "evdev", None)  # import evdev now raises ImportError
    result = cli_main("driver", "--device", "/dev/input/event0", "-i", "virtual", "-c", "x")

    assert result.status == 69
    assert "pip install 'ecu-sim[driver]'" in result.err and "Traceback" not in result.err


def test_list_without_evdev_names_the_extra_to_install(cli_main: Cli,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "evdev", None)
    result = cli_main("driver", "--list")

    assert result.status == 69 and "ecu-sim[driver]" in result.err


def test_a_device_that_does_not_exist_is_a_usage_error(cli_main: Cli, tmp_path: Path) -> None:
    pytest.importorskip("evdev")
    result = cli_main("driver", "--device", str(tmp_path / "event9"), "-i", "virtual", "-c", "x")

    assert result.status == 2
    assert f"cannot open input device {tmp_path / 'event9'}" in result.err and "--list" in result.err


def test_the_keyboard_pedal_needs_a_terminal(cli_main: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", open("/dev/null"))  # noqa: SIM115 - closed by pytest's teardown
    result = cli_main("driver", "-i", "virtual", "-c", "x", "--duration", "1")
    sys.stdin.close()

    assert result.status == 2 and "needs a terminal" in result.err


def test_a_driver_records_what_it_sends_and_replay_refuses_the_recording(cli_main: Cli,
                                                                          tmp_path: Path) -> None:
    """The real-time run with a scripted source in place of the device (cli.driver opens that)."""
    path = str(tmp_path / "driver.log")
    args = build_parser("driver").parse_args(["driver", "-i", "virtual", "-c", f"rec-{id(path)}",
                                              "--record", path, "--duration", "0.3"])
    script = Script()
    script.now = PedalReading(app_pct=20.0)
    assert run_realtime(NodeKind.DRIVER, args, load(args), lambda settings: nullcontext(script)) == 0
    sent = [line for line in Path(path).read_text().splitlines() if line.endswith(" T")]
    result = cli_main("replay", path)

    assert len(sent) == 3 and all("18F00331#FFFFFFFFFFFF91FF" in line for line in sent)
    assert result.status == 2 and "driver's recording" in result.err
