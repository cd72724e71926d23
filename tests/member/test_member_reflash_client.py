"""A reflash of a real ``ecu-sim run`` process (the class6 truck's single-node ECU) by udsoncan over
can-isotp on the host's bus: the new calibration has effect after the reset (the truck stays under
its new road speed limit, read from the speed frames on the bus), DM19 carries its CVN; a process
killed during TransferData starts again in boot mode, and a second download recovers it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import can
import cantools
import pytest
import udsoncan
from udsoncan.client import Client

from ecu_sim.calibration.files import read_image
from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import AREA_START
from ecu_sim.j1939.dm import DM1_PGN, unpack_dtcs
from ecu_sim.j1939.dm19 import DM19_PGN, parse_dm19
from ecu_sim.j1939.ids import pgn_of, source_address_of
from tests.conftest import Node, Udp, private_udp, run_cli
from tests.powertrain.test_fms_vin import BAM, reassembled
from tests.uds.test_uds_client import VIN, Text, client

DBC = Path(__file__).resolve().parents[2] / "dbc" / "j1939.dbc"
ENGINE = 0x00
TESTER = 0xF9
LIMIT_KPH = 20.0
ADDRESS_CLAIMED_PGN = 60928
#: SPN 630 FMI 13 in J1939-73's DTC format, as udsoncan reads it (three bytes, big-endian)
APPLICATION_NOT_VALID = 0x76020D
ROUTINE_ERASE, ROUTINE_CHECK = 0xFF00, 0xFF01


class Raw(udsoncan.DidCodec):
    """The CVN: four bytes, as they are."""

    def decode(self, string_bin: bytes) -> Any:
        return bytes(string_bin)

    def __len__(self) -> int:
        return 4


class Sniffer:
    """Every frame on the bus from the moment it starts, kept in order, on a thread of its own."""

    def __init__(self, udp: Udp) -> None:
        self._bus = udp.bus()
        self.frames: list[can.Message] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            msg = self._bus.recv(0.1)
            if msg is not None:
                self.frames.append(msg)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._bus.shutdown()

    def mark(self) -> int:
        return len(self.frames)

    def from_engine(self, pgn: int, since: int = 0) -> list[can.Message]:
        return [m for m in self.frames[since:] if m.is_extended_id and pgn_of(m.arbitration_id) == pgn
                and source_address_of(m.arbitration_id) == ENGINE]


@contextmanager
def sniffing(udp: Udp) -> Iterator[Sniffer]:
    sniffer = Sniffer(udp)
    try:
        yield sniffer
    finally:
        sniffer.close()


def start_engine(start: Callable[..., Node], udp: Udp, config: Path) -> Node:
    node = start("run", "--profile", "j1939", "--vehicle", "class6", "--initial-speed", "0", "--grade", "0",
                 "--config", str(config), *udp.args())
    node.wait_for("ECU on")
    return node


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "ecu.ini"
    state = tmp_path / "state"
    path.write_text(f"[fms]\nvin = {VIN}\n[diagnostics]\nstate_dir = {state}\n", encoding="utf-8")
    return path


def slow_image(tmp_path: Path, config: Path) -> Image:
    """The ECU's built-in calibration with a road speed limit of 20 km/h, built by the CLI."""
    path = tmp_path / "slow.s19"
    done = run_cli("calibration", "build", "--config", str(config), "--node", "ecu", "--id", "SLOW-20",
                   "--set", f"road_speed_limit_kph={LIMIT_KPH:g}", "-o", str(path))
    assert done.returncode == 0, done.stderr
    return read_image(path, "ecu")


def programming(tester: Client, from_default: bool = False) -> None:
    if not from_default:
        tester.change_session(3)
    tester.change_session(2)
    tester.unlock_security_access(1)


def download(tester: Client, image: Image, upto: int | None = None) -> None:
    """RequestDownload of the whole area and its data, in one TransferData (``upto``: only its
    first bytes, and no more)."""
    location = udsoncan.MemoryLocation(AREA_START, len(image.data), address_format=32, memorysize_format=32)
    tester.request_download(location)
    tester.transfer_data(1, image.data if upto is None else image.data[:upto])
    if upto is None:
        tester.request_transfer_exit()


def check_and_reset(tester: Client) -> None:
    tester.routine_control(ROUTINE_CHECK, 1)
    tester.ecu_reset(1)


def identified(tester: Client) -> tuple[str, str, bytes]:
    tester.config["data_identifiers"] = {0xF190: Text(), 0xF182: Text(), 0xF1A0: Raw()}
    values = [tester.read_data_by_identifier(did) for did in (0xF190, 0xF182, 0xF1A0)]
    vin, cal_id, cvn = (v.service_data.values[did] for v, did in zip(values, (0xF190, 0xF182, 0xF1A0),
                                                                     strict=True) if v is not None)
    return vin, cal_id, cvn


def until(predicate: Callable[[], bool]) -> None:
    give_up = time.monotonic() + 60.0
    while not predicate():
        if time.monotonic() > give_up:
            raise AssertionError("the condition never held")
        time.sleep(0.05)


def drive(udp: Udp, sniffer: Sniffer, seconds: float) -> list[float]:
    """Full pedal (EEC2 every 50 ms) for ``seconds``: the wheel-based speeds the engine sent."""
    database = cantools.database.load_file(DBC)
    assert isinstance(database, cantools.database.can.Database)
    eec2, ccvs1 = database.get_message_by_name("EEC2"), database.get_message_by_name("CCVS1")
    values = {s.name: (100.0 if s.name == "AccelPedalPos1" else 0) for s in eec2.signals}
    pedal = can.Message(arbitration_id=eec2.frame_id, data=eec2.encode(values), is_extended_id=True)
    bus = udp.bus()
    since = sniffer.mark()
    try:
        task = bus.send_periodic(pedal, 0.05)
        time.sleep(seconds)
        task.stop()
    finally:
        bus.shutdown()
    speeds = []
    for m in sniffer.from_engine(pgn_of(ccvs1.frame_id), since):
        decoded = ccvs1.decode(bytes(m.data), decode_choices=False)
        assert isinstance(decoded, dict)
        speed = decoded["WheelBasedVehicleSpeed"]
        assert isinstance(speed, int | float)
        speeds.append(float(speed))
    return speeds


def dm19_of_engine(udp: Udp, sniffer: Sniffer) -> list[tuple[int, str]]:
    """A global Request for DM19; the engine's answer (by BAM)."""
    since = sniffer.mark()
    bus = udp.bus()
    try:
        bus.send(can.Message(arbitration_id=0x18EAFF00 | TESTER, data=DM19_PGN.to_bytes(3, "little"),
                             is_extended_id=True))
    finally:
        bus.shutdown()

    def answered() -> bool:
        return any(pgn == DM19_PGN for pgn, _ in reassembled(sniffer.frames[since:], ENGINE, BAM))

    until(answered)
    return next(parse_dm19(data) for pgn, data in reassembled(sniffer.frames[since:], ENGINE, BAM)
                if pgn == DM19_PGN)


@pytest.mark.slow
def test_a_reflash_by_udsoncan_caps_the_truck_at_its_new_road_speed_limit_and_dm19_says_so(
        start: Callable[..., Node], tmp_path: Path, config: Path) -> None:
    image = slow_image(tmp_path, config)
    udp = private_udp()
    start_engine(start, udp, config)
    with sniffing(udp) as sniffer, client(udp) as tester:
        assert identified(tester)[:2] == (VIN, "ECUSIM1-ECU")
        programming(tester)
        tester.routine_control(ROUTINE_ERASE, 1)
        download(tester, image)
        check_and_reset(tester)
        tester.change_session(1)
        assert identified(tester)[1:] == ("SLOW-20", image.cvn.to_bytes(4, "big"))
        speeds = drive(udp, sniffer, 8.0)
        assert speeds and max(speeds) <= LIMIT_KPH + 0.5 and max(speeds) > LIMIT_KPH - 3.0, speeds
        assert dm19_of_engine(udp, sniffer) == [(image.cvn, "SLOW-20")]


@pytest.mark.slow
def test_a_process_killed_during_transfer_data_restarts_in_boot_mode_and_a_second_download_recovers_it(
        start: Callable[..., Node], tmp_path: Path, config: Path) -> None:
    image = slow_image(tmp_path, config)
    udp = private_udp()
    first = start_engine(start, udp, config)
    with client(udp) as tester:
        programming(tester)
        tester.routine_control(ROUTINE_ERASE, 1)
        download(tester, image, upto=128)
    first.kill()
    with sniffing(udp) as sniffer:
        again = start_engine(start, udp, config)
        again.wait_for("boot mode")
        until(lambda: bool(sniffer.from_engine(DM1_PGN)))
        claimed = sniffer.from_engine(ADDRESS_CLAIMED_PGN)
        dtcs = {d for m in sniffer.from_engine(DM1_PGN) for d, _ in unpack_dtcs(bytes(m.data))}
        with client(udp) as tester:
            refusal = refused_code(lambda: tester.read_data_by_identifier(0xF190))
            programming(tester, from_default=True)
            in_boot = tester.get_dtc_by_status_mask(0xFF)
            assert not sniffer.from_engine(61444) and not sniffer.from_engine(65265)  # no EEC1, no CCVS1
            download(tester, image)
            check_and_reset(tester)
        until(lambda: bool(sniffer.from_engine(65265)))  # the speed message again
    assert claimed and (630, 13) in {(d.spn, d.fmi) for d in dtcs} and refusal == 0x7F
    assert in_boot is not None and APPLICATION_NOT_VALID in [d.id for d in in_boot.service_data.dtcs]
    assert again.stop() == 0, again.log


def refused_code(call: Callable[[], object]) -> int:
    with pytest.raises(udsoncan.exceptions.NegativeResponseException) as caught:
        call()
    code = caught.value.response.code
    assert code is not None
    return code
