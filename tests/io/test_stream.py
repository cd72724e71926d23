"""``--stream udp://HOST:PORT``: one JSON datagram per tick, equal to what the run recorded; a viewer
that is not there changes nothing."""

from __future__ import annotations

import itertools
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import can
import cantools
import pytest

from ecu_sim.codec.profile import Profile
from ecu_sim.j1939.ids import pgn_of, source_address_of
from tests.conftest import Cli, summary_of
from tests.helpers.busclock import Peer, peer

__all__ = ["peer"]


@pytest.fixture
def receiver() -> Iterator[socket.socket]:
    """A viewer on the loopback: a UDP socket on a free port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock
    finally:
        sock.close()


def target(sock: socket.socket) -> str:
    host, port = sock.getsockname()
    return f"udp://{host}:{port}"


def datagrams(sock: socket.socket) -> list[dict[str, Any]]:
    """Every datagram waiting at ``sock``, decoded."""
    sock.setblocking(False)
    found = []
    while True:
        try:
            found.append(json.loads(sock.recv(1 << 16)))
        except BlockingIOError:
            return found


def recorded_ticks(log: Path) -> list[tuple[list[can.Message], list[can.Message]]]:
    """Each tick's received and sent frames, split by the recording's tick journal."""
    frames = iter(list(can.LogReader(str(log))))
    ticks = []
    for line in Path(f"{log}.ticks").read_text().splitlines()[1:]:
        if line.startswith(("end ", "part ")):
            continue
        rx, tx = (int(n) for n in line.split()[:2])
        ticks.append(([next(frames) for _ in range(rx)], [next(frames) for _ in range(tx)]))
    return ticks


def decoded(frames: list[can.Message]) -> dict[str, dict[str, float]]:
    """The newest frame of each message the DBC describes, decoded by cantools, keyed as streamed."""
    database = Profile.load("amp").database
    found = {}
    for msg in frames:
        try:
            message = database.get_message_by_frame_id(msg.arbitration_id)
        except KeyError:
            continue
        ident = msg.arbitration_id
        key = f"{message.name} PGN {pgn_of(ident)} SA 0x{source_address_of(ident):02X}"
        values = cantools.database.can.Message.decode(message, bytes(msg.data), decode_choices=False)
        assert isinstance(values, dict)
        found[key] = {name: float(value) for name, value in values.items()}  # type: ignore[arg-type]
    return found


@pytest.mark.parametrize("command", ["run", "ccm"])
def test_each_tick_is_one_datagram_whose_signals_equal_the_decoded_recording(
        cli_main: Cli, peer: Peer, receiver: socket.socket, tmp_path: Path, command: str) -> None:
    peer.role = "app" if command == "run" else "speed"
    log = tmp_path / "node.log"
    result = cli_main(command, *peer.args, "--duration", "3", "--record", str(log),
                      "--stream", target(receiver))
    assert result.status == 0, result.err
    received = datagrams(receiver)
    ticks = recorded_ticks(log)
    node = "ecu" if command == "run" else "ccm"
    assert len(ticks) == 30 and [d["loop"]["tick"] for d in received] == list(range(30))
    for datagram, (rx, tx) in zip(received, ticks, strict=True):
        assert datagram[node]["rx"] == decoded(rx)
        assert datagram[node]["tx"] == decoded(tx)
    assert sum(bool(d[node]["rx"]) for d in received) == 30


def test_the_state_streamed_by_simulate_is_the_state_it_writes_to_its_csv(
        cli_main: Cli, receiver: socket.socket, tmp_path: Path) -> None:
    out = tmp_path / "run.csv"
    result = cli_main("simulate", "--duration", "5", "--out", str(out), "--stream", target(receiver))
    assert result.status == 0, result.err
    rows = [line.split(",") for line in out.read_text().splitlines()[1:]]
    received = datagrams(receiver)
    assert len(received) == len(rows) == 50
    for datagram, (t, speed, app, grade, distance) in zip(received, rows, strict=True):
        state = datagram["ecu"]["state"]
        assert datagram["timestamp"] == pytest.approx(float(t))
        assert f"{state['speed_kph']:.6f},{state['app_pct']:.4f}" == f"{speed},{app}"
        assert f"{state['grade_pct']:.4f},{state['distance_m']:.3f}" == f"{grade},{distance}"
    for before, after in itertools.pairwise(received):  # the CCM ticks after the ECU: one tick on
        assert before["ccm"]["tx"] == after["ecu"]["rx"] != {}


def frames_and_ticks(log: Path) -> tuple[list[tuple[int, bytes, bool]], list[str]]:
    """The recording without its time stamps: each frame's identifier, bytes and direction, and
    the journal's ticks."""
    frames = [(m.arbitration_id, bytes(m.data), m.is_rx) for m in can.LogReader(str(log))]
    return frames, Path(f"{log}.ticks").read_text().splitlines()[1:]


def test_a_viewer_that_is_not_there_changes_nothing_in_the_run(
        cli_main: Cli, peer: Peer, tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as closed:
        closed.bind(("127.0.0.1", 0))
        nobody = target(closed)  # a port nothing listens on once this socket is closed
    without, with_stream = tmp_path / "without.log", tmp_path / "with.log"
    first = cli_main(*peer.args, "--duration", "5", "--record", str(without))
    second = cli_main(*peer.args, "--duration", "5", "--record", str(with_stream), "--stream", nobody)
    assert first.status == second.status == 0, second.err
    assert frames_and_ticks(without) == frames_and_ticks(with_stream)
    one, other = summary_of(first.err), summary_of(second.err)
    assert (one.ticks, one.late, one.skipped, one.rx, one.tx, one.invalid, one.other) == \
        (other.ticks, other.late, other.skipped, other.rx, other.tx, other.invalid, other.other)


@pytest.mark.parametrize("bad", ["tcp://127.0.0.1:9870", "udp://127.0.0.1", "127.0.0.1:9870"])
def test_a_stream_target_that_is_not_udp_host_port_exits_2_naming_it(
        cli_main: Cli, peer: Peer, bad: str) -> None:
    result = cli_main(*peer.args, "--duration", "1", "--stream", bad)
    assert result.status == 2 and "udp://HOST:PORT" in result.err and bad in result.err
