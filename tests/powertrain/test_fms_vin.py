"""``--fms`` with ``[fms] vin``: VI (PGN 65260) carries the VIN, by the transport protocol as it is 17
bytes long: every 10 s and to a global Request by BAM, to an addressed Request by RTS/CTS; the FMS
identity (PGN 64977) is answered on request too.

The frames are reassembled here from the transport protocol's bytes (J1939-21: TP.CM control byte
32 BAM, 16 RTS, 17 CTS; TP.DT a sequence number and seven bytes) and decoded by cantools with
dbc/fms.dbc alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

import can

from tests.conftest import Cli
from tests.helpers.fms import fms_dbc
from tests.helpers.powertrainrig import CONTROLLER, Controller, global_request, rig, settings

VIN = "1M8GDM9AXKP042788"
GATEWAY = 0x4A
VI_PGN, FMS_PGN, TP_CM_PGN, TP_DT_PGN = 0xFEEC, 0xFDD1, 0xEC00, 0xEB00
BAM, RTS, CTS = 32, 16, 17
RUN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0", "--fms")


def decode(name: str, payload: bytes) -> dict[str, int]:
    """A payload of message ``name`` as cantools decodes it with dbc/fms.dbc, raw."""
    decoded = fms_dbc().get_message_by_name(name).decode(payload, decode_choices=False, scaling=False)
    assert isinstance(decoded, dict)
    return {key: int(value) for key, value in decoded.items()}  # type: ignore[arg-type]


def vin_of(payload: bytes) -> str:
    """VI's payload decoded by cantools, back to its 17 ASCII bytes."""
    return decode("VI", payload)["VehicleIdentificationNumber"].to_bytes(17, "little").decode("ascii")


def pgn_route(can_id: int) -> tuple[int, int, int]:
    """PGN, destination (FFh for a PDU2 PGN) and source of a 29-bit identifier."""
    pf = (can_id >> 16) & 0xFF
    if pf < 240:
        return (can_id >> 8) & 0x3FF00, (can_id >> 8) & 0xFF, can_id & 0xFF
    return (can_id >> 8) & 0x3FFFF, 0xFF, can_id & 0xFF


def reassembled(frames: Iterable[can.Message], source: int, kind: int) -> list[tuple[int, bytes]]:
    """Each transfer (BAM or RTS/CTS, ``kind``) from ``source``: its PGN and its bytes."""
    done: list[tuple[int, bytes]] = []
    size, pgn, parts = 0, 0, dict[int, bytes]()
    for m in frames:
        route = pgn_route(m.arbitration_id)
        data = bytes(m.data)
        if route[2] != source:
            continue
        if route[0] == TP_CM_PGN and data[0] == kind:
            size, pgn, parts = int.from_bytes(data[1:3], "little"), int.from_bytes(data[5:8], "little"), {}
        elif route[0] == TP_DT_PGN and size:
            parts[data[0]] = data[1:]
            whole = b"".join(parts[n] for n in sorted(parts))
            if len(whole) >= size:
                done.append((pgn, whole[:size]))
                size = 0
    return done


def test_vi_carries_the_vin_by_bam_every_ten_seconds(tmp_path: Path, cli_main: Cli, virtual_time: None,
                                                     virtual_channel: str) -> None:
    config, log = tmp_path / "truck.ini", tmp_path / "fms.log"
    config.write_text(f"[fms]\nvin = {VIN}\n")
    result = cli_main("-i", "virtual", "-c", virtual_channel, *RUN, "--config", str(config),
                      "--duration", "25", "--record", str(log))
    assert result.status == 0, result.err
    sent = [payload for pgn, payload in reassembled(can.LogReader(str(log)), GATEWAY, BAM) if pgn == VI_PGN]
    assert len(sent) == 2  # on its 10 s grid: at 10 s and 20 s (the claim holds back the one at 0 s)
    assert {vin_of(payload) for payload in sent} == {VIN}


def test_without_a_vin_vi_is_not_available() -> None:
    r = rig(lambda k: [global_request(VI_PGN)] if k == 300 else [],
            dataclasses.replace(settings(), fms=dataclasses.replace(settings().fms, enabled=True)))
    r.run(400)
    sent = reassembled((h.msg for h in r.controller.heard), GATEWAY, BAM)
    assert sent and all(payload == b"\xff" * 17 for pgn, payload in sent if pgn == VI_PGN)


class Requester:
    """The controller's script: a Request to the gateway at tick 300, then a CTS for the whole of any
    RTS the gateway sends it."""

    def __init__(self, pgn: int) -> None:
        self.pgn = pgn
        self.controller: Controller | None = None
        self.answered = 0

    def __call__(self, tick: int) -> list[can.Message]:
        if tick == 300:
            return [global_request(self.pgn, GATEWAY)]
        assert self.controller is not None
        to_me = (TP_CM_PGN, CONTROLLER, GATEWAY)
        rts = [h.msg for h in self.controller.heard
               if pgn_route(h.msg.arbitration_id) == to_me and h.msg.data[0] == RTS]
        if len(rts) == self.answered:
            return []
        self.answered = len(rts)
        packets, pgn = rts[-1].data[3], bytes(rts[-1].data[5:8])
        cts = bytes([CTS, packets, 1, 0xFF, 0xFF]) + pgn
        cts_id = 0x1CEC0000 | GATEWAY << 8 | CONTROLLER  # TP.CM, priority 7, to the gateway
        return [can.Message(arbitration_id=cts_id, data=cts, is_extended_id=True)]


def ask(pgn: int) -> list[can.Message]:
    """What the gateway sends the controller, and everyone, after an addressed Request for ``pgn``."""
    given = settings()
    requester = Requester(pgn)
    r = rig(requester, dataclasses.replace(given, fms=dataclasses.replace(given.fms, enabled=True, vin=VIN)))
    requester.controller = r.controller
    r.run(400)
    return [h.msg for h in r.controller.heard if h.tick > 300]


def test_an_addressed_request_for_vi_gets_the_vin_by_rts_cts() -> None:
    answers = reassembled(ask(VI_PGN), GATEWAY, RTS)
    assert [(pgn, vin_of(payload)) for pgn, payload in answers] == [(VI_PGN, VIN)]


def test_a_global_request_for_vi_gets_the_vin_by_bam() -> None:
    given = settings()
    r = rig(lambda k: [global_request(VI_PGN)] if k == 300 else [],
            dataclasses.replace(given, fms=dataclasses.replace(given.fms, enabled=True, vin=VIN)))
    r.run(400)
    announced = [h.tick for h in r.controller.from_address(GATEWAY, TP_CM_PGN) if h.msg.data[0] == BAM]
    assert 301 in announced  # the next tick; the cyclic VI went at the claim, its next one is 10 s on
    assert {vin_of(p) for _, p in reassembled((h.msg for h in r.controller.heard), GATEWAY, BAM)} == {VIN}


def test_an_addressed_request_for_the_fms_identity_is_answered() -> None:
    answers = [m for m in ask(FMS_PGN) if pgn_route(m.arbitration_id)[0] == FMS_PGN]
    decoded = decode("FMS", bytes(answers[0].data))
    assert decoded["RequestsSupported"] == 1
    assert decoded["SoftwareVersionSupported"].to_bytes(4, "little") == b"0500"
