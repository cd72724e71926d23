"""``ecu-sim j1939 mem read|write`` against a real engine process on a udp_multicast bus."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import pytest

from ecu_sim.calibration.layout import AREA_START, HEADER_SIZE, INTEGRITY_SIZE
from tests.conftest import Cli, Node, Udp

pytestmark = pytest.mark.slow

LIMIT = f"0x{AREA_START + HEADER_SIZE:X}"


def engine(start: Callable[..., Node], udp: Udp) -> Node:
    node = start(*udp.args(), "--profile", "j1939", "--vehicle", "class6", "--initial-speed", "0",
                 "--grade", "0")
    node.wait_for(r"J1939 SA 0x00 claimed")
    return node


def mem(cli_main: Cli, udp: Udp, *args: str) -> tuple[int, str]:
    result = cli_main("j1939", "mem", *args, *udp.args(), "--wait", "5")
    return result.status, result.out.strip()


def test_mem_read_prints_the_bytes_of_the_engines_road_speed_limit(
        start: Callable[..., Node], udp: Udp, cli_main: Cli) -> None:
    engine(start, udp)
    assert mem(cli_main, udp, "read", "0x00", "--address", LIMIT, "--length", "8") == (
        0, "0x00: " + struct.pack("<d", float("inf")).hex())


def test_mem_write_of_a_whole_image_changes_the_limit_and_a_wrong_algorithm_is_refused(
        start: Callable[..., Node], udp: Udp, cli_main: Cli) -> None:
    engine(start, udp)
    status, out = mem(cli_main, udp, "read", "0x00", "--length", "256")
    assert status == 0
    image = bytearray.fromhex(out.split()[1])
    image[HEADER_SIZE:HEADER_SIZE + 8] = struct.pack("<d", 50.0)
    image[-INTEGRITY_SIZE:] = struct.pack("<I", zlib.adler32(bytes(image[:-INTEGRITY_SIZE])))
    refused = mem(cli_main, udp, "write", "0x00", "--data", image.hex(), "--key-algorithm",
                  "tests.helpers.membench:inverted")
    assert refused[0] == 1 and "invalid key" in refused[1] and "0x1003" in refused[1]
    assert mem(cli_main, udp, "write", "0x00", "--data", image.hex()) == (0, "0x00: 256 bytes written")
    assert mem(cli_main, udp, "read", "0x00", "--address", LIMIT, "--length", "8") == (
        0, "0x00: " + struct.pack("<d", 50.0).hex())


def test_mem_write_at_a_read_level_is_refused_with_the_reason(
        start: Callable[..., Node], udp: Udp, cli_main: Cli) -> None:
    engine(start, udp)
    status, out = mem(cli_main, udp, "write", "0x00", "--spatial", "0", "--data", "00", "--level", "1")
    assert status == 1 and "0x1002" in out and "user level" in out


def test_mem_without_an_operation_is_a_usage_error(cli_main: Cli) -> None:
    result = cli_main("j1939", "mem", "0x00", "-i", "virtual")
    assert result.status == 2 and "read or write" in result.err
