"""Attacks in ``ecu-sim cosim``: staged at ticks by the attacker ``simulate`` uses, the same case
giving the same frames, labels and answers, and the attack acting on the truck the peer steps."""

from __future__ import annotations

import math
import socket
import struct
from collections.abc import Callable
from pathlib import Path

import can
import pytest

from ecu_sim.attack.capture import SUFFIX, read_labels
from tests.conftest import HANG_S, Cli, Node

POWERTRAIN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--initial-speed", "80")
TSC1 = "tsc1:speed=2000@1+1"
TICKS = 300


def step(port: int) -> bytes:
    """One request to the end of the run, no pedal, level, no brake; the answer as it came."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(HANG_S)
        sock.sendto(struct.pack("<7d", 1.0, 1.0, float(TICKS), 0.0, 0.0, 0.0, math.nan), ("127.0.0.1", port))
        return sock.recv(65535)


def cosim(start: Callable[..., Node], *args: str) -> bytes:
    """A cosim process stepped by one request to the end of its run; the answer."""
    node = start("cosim", *POWERTRAIN, "--listen", "127.0.0.1:0", "--duration", str(TICKS / 100), *args)
    answer = step(int(node.wait_for(r"listening on udp 127\.0\.0\.1:(\d+)")[1]))
    assert node.wait() == 0, node.log
    return answer


def speed_kph(answer: bytes) -> float:
    return float(struct.unpack_from("<2d", answer, 32)[1])


@pytest.mark.slow
def test_two_cosim_runs_of_the_same_attacked_case_capture_the_same_labelled_frames_and_answer_alike(
        start: Callable[..., Node], tmp_path: Path) -> None:
    attacks = ("--attack", TSC1, "--attack", "fuzz:rate=500@2+0.5", "--attack-seed", "3")
    first = cosim(start, *attacks, "--capture", str(tmp_path / "one.log"))
    second = cosim(start, *attacks, "--capture", str(tmp_path / "two.log"))
    assert first == second
    for suffix in ("", SUFFIX):
        one, two = Path(f"{tmp_path / 'one.log'}{suffix}"), Path(f"{tmp_path / 'two.log'}{suffix}")
        assert one.read_bytes() == two.read_bytes()


@pytest.mark.slow
def test_a_cosim_capture_labels_the_attackers_frames_in_their_window_and_names_the_mode(
        start: Callable[..., Node], tmp_path: Path) -> None:
    capture = tmp_path / "run.log"
    cosim(start, "--attack", TSC1, "--capture", str(capture))
    header, labels = read_labels(str(capture))
    frames = list(can.CanutilsLogReader(str(capture)))
    attacked = [msg for msg, label in zip(frames, labels, strict=True) if label == 1]
    assert header["mode"] == "cosim" and header["attacks"][0]["start_tick"] == 100
    assert len(attacked) == 100 and all(1.0 <= msg.timestamp < 2.0 for msg in attacked)


@pytest.mark.slow
def test_a_tsc1_attack_in_cosim_changes_the_speed_the_peer_sees(start: Callable[..., Node]) -> None:
    plain = speed_kph(cosim(start))
    attacked = speed_kph(cosim(start, "--attack", TSC1))
    assert attacked > plain + 1.0


def test_a_cosim_attack_past_the_runs_end_exits_2_before_it_listens(cli_main: Cli) -> None:
    result = cli_main("cosim", *POWERTRAIN, "--listen", "127.0.0.1:0", "--duration", "1", "--attack", TSC1)
    assert result.status == 2
    assert "reaches past the run's end" in result.err and "listening" not in result.err
