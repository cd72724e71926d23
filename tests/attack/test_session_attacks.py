"""The transport-protocol attacks that take part in a session, staged by `ecu-sim simulate`
against the class6 powertrain network: the frames the reference gives, and the engine's reaction
that docs/security.md documents (the kernel's abort reasons)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecu_sim.attack.capture import SUFFIX
from ecu_sim.attack.plan import BENIGN
from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import TP_CM_PGN, TP_DT_PGN, received
from ecu_sim.j1939.reassembly import SESSIONS_IN
from ecu_sim.j1939.transport import (
    ABORT,
    ABORT_BAD_SEQUENCE,
    ABORT_BUSY,
    ABORT_RETRANSMIT_LIMIT,
    ABORT_TIMEOUT,
    CTS,
    EOMA,
    RTS,
)
from tests.conftest import Cli
from tests.helpers.attacked import labelled, record, simulate

ENGINE, TOOL = 0x00, 0xF9
EC1 = 0xFEE3


def between(capture: Path, source: int, destination: int, label: int) -> list[tuple[float, int, bytes]]:
    """(time, PGN, data) of the transport frames ``source`` sent ``destination``, labelled ``label``."""
    out = []
    for msg, got_label in labelled(capture):
        got = received(msg.arbitration_id, msg.data)
        if (got.source, got.destination, got_label) == (source, destination, label) and got.pgn in (
                TP_CM_PGN, TP_DT_PGN):
            out.append((msg.timestamp, got.pgn, got.data))
    return out


def controls(frames: list[tuple[float, int, bytes]]) -> list[tuple[int, int]]:
    """(control byte, abort reason or packets) of each TP.CM."""
    return [(data[0], data[1]) for _, pgn, data in frames if pgn == TP_CM_PGN]


def packets(frames: list[tuple[float, int, bytes]]) -> list[int]:
    return [data[0] for _, pgn, data in frames if pgn == TP_DT_PGN]


def test_a_cts_past_the_messages_end_gets_abort_5_and_no_data_packet(cli_main: Cli, tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "cts@1+2", duration="4")
    sent = between(capture, TOOL, ENGINE, 1)
    assert [data[0] for _, _, data in sent] == [CTS]
    assert layouts.decode(layouts.TP_CM, sent[0][2])["CTS_NextSequence"] == 6
    engine = between(capture, ENGINE, TOOL, BENIGN)
    assert controls(engine) == [(RTS, 40), (ABORT, ABORT_RETRANSMIT_LIMIT)]
    assert packets(engine) == []


def test_a_second_rts_mid_session_is_refused_busy_and_the_first_message_completes(cli_main: Cli,
                                                                                 tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "rts:size=20,false=9@1+2", duration="4")
    assert controls(between(capture, TOOL, ENGINE, 1)) == [(RTS, 20), (RTS, 9)]
    engine = controls(between(capture, ENGINE, TOOL, BENIGN))
    assert engine == [(CTS, 3), (ABORT, ABORT_BUSY), (EOMA, 20)]


def test_an_end_of_message_mid_transfer_ends_the_engines_session_without_an_abort(cli_main: Cli,
                                                                                   tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "interrupt:by=eoma,packets=2@1+2", duration="4")
    assert controls(between(capture, TOOL, ENGINE, 1)) == [(CTS, 2), (EOMA, 40)]
    engine = between(capture, ENGINE, TOOL, BENIGN)
    assert packets(engine) == [1, 2]
    assert controls(engine) == [(RTS, 40)]  # no timeout: the session ended at the EoMA


def test_an_abort_mid_transfer_closes_the_engines_session_at_once(cli_main: Cli, tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "interrupt:by=abort@1+2", duration="4")
    assert controls(between(capture, TOOL, ENGINE, 1)) == [(CTS, 2), (ABORT, ABORT_TIMEOUT)]
    engine = between(capture, ENGINE, TOOL, BENIGN)
    assert packets(engine) == [1, 2] and controls(engine) == [(RTS, 40)]


@pytest.mark.parametrize("mode", ["spoof", "overwrite"])
def test_a_spoofed_or_repeated_data_packet_aborts_the_engines_session_with_reason_7(
        cli_main: Cli, tmp_path: Path, mode: str) -> None:
    capture, _ = simulate(cli_main, tmp_path, f"dt:mode={mode},fill=0@1+2", duration="4")
    sent = between(capture, TOOL, ENGINE, 1)
    assert packets(sent) == [1, 1, 2, 3]
    spoofed = [n for n, (_, pgn, data) in enumerate(p for p in sent if p[1] == TP_DT_PGN)
               if data[1:] == bytes(7)]
    assert spoofed == ([0] if mode == "spoof" else [1])
    assert controls(between(capture, ENGINE, TOOL, BENIGN)) == [(CTS, 3), (ABORT, ABORT_BAD_SEQUENCE)]


def test_an_rts_flood_of_1785_bytes_is_refused_busy_beyond_the_engines_pool(cli_main: Cli,
                                                                          tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "rtsflood:source=0x80,count=40,size=1785@1+2", duration="4")
    answers: dict[int, list[tuple[int, int]]] = {}
    for msg, label in labelled(capture):
        got = received(msg.arbitration_id, msg.data)
        if (label, got.source, got.pgn) == (BENIGN, ENGINE, TP_CM_PGN) and 0x80 <= got.destination < 0xA8:
            answers.setdefault(got.destination, []).append((got.data[0], got.data[1]))
    # the pool's sessions are granted, then time out waiting for data that never comes (T2)
    granted, refused = [(CTS, 255), (ABORT, ABORT_TIMEOUT)], [(ABORT, ABORT_BUSY)]
    assert sorted(answers.values()) == [granted] * SESSIONS_IN + [refused] * (40 - SESSIONS_IN)


ALL = ("cts@1+1", "rts@2+1", "interrupt@3+1", "interrupt:by=abort@3.5+0.5", "dt@4+1",
       "dt:mode=overwrite@5+1", "rtsflood@6+1", "fuzz:spn=190,rate=200@1+2")


def test_the_new_attack_kinds_give_the_same_labelled_frames_on_two_runs(cli_main: Cli,
                                                                       tmp_path: Path) -> None:
    attacks = (*ALL, f"replay:file={record(tmp_path / 'recorded.log')}@7+1")
    first, _ = simulate(cli_main, tmp_path, *attacks, name="first")
    second, _ = simulate(cli_main, tmp_path, *attacks, name="second")
    assert first.read_bytes() == second.read_bytes()
    assert Path(f"{first}{SUFFIX}").read_bytes() == Path(f"{second}{SUFFIX}").read_bytes()
    assert {label for _, label in labelled(first)} == set(range(len(attacks) + 1))
