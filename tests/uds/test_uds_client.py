"""A real ``ecu-sim`` process on the host's bus, diagnosed by udsoncan over can-isotp (29-bit normal
fixed addressing): two clients nobody here wrote. The tester hears its own frames back on
udp_multicast; ISO-TP takes only the node's answers (other identifiers), so that is harmless."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import isotp
import pytest
import udsoncan
from udsoncan.client import Client
from udsoncan.connections import PythonIsoTpConnection
from udsoncan.exceptions import NegativeResponseException

from ecu_sim.uds.security import default_key
from tests.conftest import HANG_S, Node, Udp, private_udp

TESTER = 0xF9
ENGINE = 0x00
CCM = 0x11
VIN = "1M8GDM9AXKP042788"
#: SPN 520 FMI 31 in J1939-73's DTC format, as udsoncan reads it (three bytes, big-endian)
FAULT_DTC = 0x08021F
#: long enough that the request right after the lockout still falls inside it on a loaded machine
DELAY_S = 6.0


class Text(udsoncan.DidCodec):
    """An ASCII identifier of any length: the rest of the answer."""

    def decode(self, string_bin: bytes) -> Any:
        return string_bin.decode("ascii")

    def __len__(self) -> int:
        raise udsoncan.DidCodec.ReadAllRemainingData


def wrong_key(level: int, seed: bytes, params: Any) -> bytes:
    return bytes(b ^ 0xFF for b in default_key(seed, level))


@contextmanager
def client(udp: Udp, node: int = ENGINE) -> Iterator[Client]:
    bus = udp.bus()
    address = isotp.Address(isotp.AddressingMode.NormalFixed_29bits, source_address=TESTER,
                            target_address=node)
    stack = isotp.CanStack(bus, address=address, params={"blocking_send": False})
    config: Any = dict(udsoncan.configs.default_client_config)
    config.update(data_identifiers={0xF190: Text(), 0xF195: Text()}, use_server_timing=False,
                  p2_timeout=HANG_S / 10, request_timeout=HANG_S / 5,
                  security_algo=lambda level, seed, params: default_key(seed, level))
    try:
        with Client(PythonIsoTpConnection(stack), config=config) as tester:
            yield tester
    finally:
        bus.shutdown()


@pytest.fixture
def engine(start: Callable[..., Node], tmp_path: Path) -> Udp:
    """The single-node ECU on its own udp_multicast group, a DTC set for its first half second."""
    udp = private_udp()
    config = tmp_path / "ecu.ini"
    config.write_text(f"[fms]\nvin = {VIN}\n[diagnostics]\ndelay_s = {DELAY_S}\n", encoding="utf-8")
    node = start("run", "--profile", "j1939", "--config", str(config), *udp.args(),
                 "--fault", "dtc=520:31@0+0.5")
    node.wait_for("ECU on")
    return udp


def refused(call: Callable[[], object]) -> int:
    with pytest.raises(NegativeResponseException) as caught:
        call()
    code = caught.value.response.code
    assert code is not None
    return code


def until(predicate: Callable[[], bool]) -> None:
    """Ask again until ``predicate`` holds: each try is a request, never a sleep."""
    for _ in range(200):
        if predicate():
            return
    raise AssertionError("the condition never held")


@pytest.mark.slow
def test_session_control_and_identification(engine: Udp) -> None:
    with client(engine) as tester:
        session = tester.change_session(3)
        assert session is not None  # P2: two of the ECU's 100 ms periods; P2*: 5 s
        assert (session.service_data.p2_server_max, session.service_data.p2_star_server_max) == (0.2, 5.0)
        vin = tester.read_data_by_identifier(0xF190)
        software = tester.read_data_by_identifier(0xF195)
        assert vin is not None and vin.service_data.values[0xF190] == VIN
        assert software is not None and software.service_data.values[0xF195].startswith("ecu-sim ")


@pytest.mark.slow
def test_dtcs_read_and_cleared(engine: Udp) -> None:
    with client(engine) as tester:
        def fault_gone_by() -> bool:
            answer = tester.get_dtc_by_status_mask(0x01)
            return answer is not None and FAULT_DTC not in [d.id for d in answer.service_data.dtcs]

        until(fault_gone_by)  # its window ended: previously active
        before = tester.get_dtc_by_status_mask(0xFF)
        assert before is not None and FAULT_DTC in [d.id for d in before.service_data.dtcs]
        tester.clear_dtc(0xFFFFFF)
        after = tester.get_dtc_by_status_mask(0xFF)
        assert after is not None and FAULT_DTC not in [d.id for d in after.service_data.dtcs]


@pytest.mark.slow
def test_security_access_refuses_wrong_keys_then_delays_then_unlocks(engine: Udp) -> None:
    with client(engine) as tester:
        tester.change_session(3)
        tester.config["security_algo"] = wrong_key
        codes = [refused(lambda: tester.unlock_security_access(1)) for _ in range(4)]
        assert codes == [0x35, 0x35, 0x35, 0x36]
        assert refused(lambda: tester.request_seed(1)) == 0x37
        tester.config["security_algo"] = lambda level, seed, params: default_key(seed, level)

        def unlocked() -> bool:
            try:
                tester.unlock_security_access(1)
            except NegativeResponseException as exc:
                assert exc.response.code == 0x37
                return False
            return True

        until(unlocked)


@pytest.mark.slow
def test_the_ccm_answers_on_its_own_address(start: Callable[..., Node]) -> None:
    udp = private_udp()
    start("ccm", "--profile", "j1939", *udp.args()).wait_for("CCM on")
    with client(udp, CCM) as tester:
        tester.tester_present()
        software = tester.read_data_by_identifier(0xF195)
        assert software is not None and software.service_data.values[0xF195].startswith("ecu-sim ")


@pytest.mark.slow
def test_the_answers_heard_back_are_no_address_violation(start: Callable[..., Node]) -> None:
    udp = private_udp()
    node = start("run", "--profile", "j1939", *udp.args())
    node.wait_for("ECU on")
    with client(udp) as tester:
        tester.change_session(3)
        for _ in range(5):
            tester.read_data_by_identifier(0xF195)
    assert node.stop() == 0, node.log
    assert "address violations" not in node.log and "address conflict" not in node.log, node.log
