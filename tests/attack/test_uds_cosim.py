"""The attacks on the diagnostic door in ``ecu-sim cosim``: the same attacker on the stepped ECU's
bus, the brute force unlocking a flawed node there too."""

from __future__ import annotations

import math
import socket
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import HANG_S, Node

TICKS = 800


@pytest.mark.slow
def test_a_brute_force_in_cosim_unlocks_a_node_with_a_weak_key_and_no_attempt_limit(
        start: Callable[..., Node], tmp_path: Path) -> None:
    config, capture = tmp_path / "flawed.ini", tmp_path / "run.log"
    config.write_text("[diagnostics]\nflaw = weak-key+no-attempt-limit\n", encoding="ascii")
    node = start("cosim", "--config", str(config), "--vehicle", "class6", "--profile", "j1939", "--network",
                 "powertrain", "--listen", "127.0.0.1:0", "--duration", str(TICKS / 100),
                 "--attack", "bruteforce@0.5", "--capture", str(capture))
    port = int(node.wait_for(r"listening on udp 127\.0\.0\.1:(\d+)")[1])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(HANG_S)
        sock.sendto(struct.pack("<7d", 1.0, 1.0, float(TICKS), 0.0, 0.0, 0.0, math.nan), ("127.0.0.1", port))
        sock.recv(65535)
    assert node.wait() == 0, node.log
    assert "18DAF900#026702" in capture.read_text(encoding="ascii")
