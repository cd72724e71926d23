"""``ecu-sim run --plant udp:HOST:PORT``: the speed on the bus is an external plant's, or not available."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import can
import pytest

from ecu_sim.codec.role import Invalid
from ecu_sim.cosim import protocol
from ecu_sim.cosim.protocol import Datagram
from ecu_sim.runs.prepare import prepare
from ecu_sim.settings.model import RunSettings, Settings
from tests.conftest import Cli, summary_of
from tests.helpers.cosim_peer import served

pytestmark = pytest.mark.usefixtures("virtual_time")
SPEED = 1


@pytest.fixture
def ear(virtual_channel: str) -> Iterator[can.BusABC]:
    bus = can.Bus(interface="virtual", channel=virtual_channel, receive_own_messages=False)
    try:
        yield bus
    finally:
        bus.shutdown()


def bus_speeds(ear: can.BusABC) -> list[float | Invalid]:
    _, profile = prepare(Settings())
    found = []
    while (msg := ear.recv(0.0)) is not None:
        if profile.speed.matches(msg.arbitration_id, msg.is_extended_id):
            found.append(profile.speed.decode(msg.data))
    return found


def test_the_speed_on_the_bus_is_the_plants(cli_main: Cli, virtual_channel: str, ear: can.BusABC) -> None:
    answers: list[Datagram] = []
    plant_settings = Settings(run=RunSettings(initial_speed_kph=60.0, grade_pct=2.0))
    with served(plant_settings) as (_, server):
        answer = server.answer

        def recorded(data: bytes) -> bytes:
            reply = answer(data)
            answers.append(protocol.decode(reply, 7))
            return reply

        server.answer = recorded  # type: ignore[method-assign]
        address = server_address(server)
        # A period of 1 s gives the plant half a second to answer: no answer is late, however
        # busy the machine (virtual time: the run itself takes no real time).
        result = cli_main("-i", "virtual", "-c", virtual_channel, "--period", "1", "--duration", "30",
                          "--initial-speed", "60", "--plant", f"udp:{address}")
    assert result.status == 0, result.err
    assert re.search(r"plant rtt \d+\.\d+ ms late 0", result.err), result.err
    _, profile = prepare(Settings())
    wire = [profile.speed.decode(profile.speed.encode(a.values[SPEED])) for a in answers]
    speeds = bus_speeds(ear)
    assert len(speeds) == 30 and len(answers) == 29  # tick 0 sends the initial speed
    assert speeds[1:] == wire
    # the plant's own truck, coasting up its 2 % grade
    assert speeds[0] == 60.0 and isinstance(wire[-1], float) and wire[-1] < 60.0


def server_address(server: object) -> str:
    sock = server._sock  # type: ignore[attr-defined]
    host, port = sock.getsockname()
    return f"{host}:{port}"


def test_a_silent_plant_makes_the_speed_not_available_within_the_input_timeout(
        cli_main: Cli, virtual_channel: str, ear: can.BusABC, caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        result = cli_main("-i", "virtual", "-c", virtual_channel, "--duration", "1",
                          "--plant", f"udp:127.0.0.1:{port}", "--app-timeout", "0.3")
    assert result.status == 0, result.err
    speeds = bus_speeds(ear)
    assert speeds[:3] == [80.0, 80.0, 80.0]  # the initial speed, held for the input timeout
    assert speeds[3:] == [Invalid.NOT_AVAILABLE] * 7
    assert "has not answered for 3 ticks (the input timeout)" in caplog.text
    assert "plant rtt none yet late 9" in summary_of(result.err).line  # every tick after tick 0


@pytest.mark.parametrize("plant", ["127.0.0.1:47000", "udp:127.0.0.1", "tcp:h:1", "udp:h:0"])
def test_a_plant_that_is_not_udp_host_port_exits_2(cli_main: Cli, plant: str) -> None:
    result = cli_main("--plant", plant, "--duration", "1")
    assert result.status == 2 and "expected udp:HOST:PORT" in result.err and "--plant" in result.err


def test_a_plant_with_the_class6_truck_exits_2(cli_main: Cli) -> None:
    result = cli_main("--plant", "udp:127.0.0.1:47000", "--vehicle", "class6", "--profile", "j1939",
                      "--duration", "1")
    assert result.status == 2 and "--plant replaces the testbed truck" in result.err
