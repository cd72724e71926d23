"""A recording is the bus as it was, for other tools: each frame once, its interface, time order.

What can-utils' ``canplayer`` needs to put a recording back on a bus (the VM suite plays one onto
vcan and compares; tests/socketcan/test_recording_vm.py). Here: python-can's virtual bus in this
process, and two processes on udp_multicast, which hands each its own frames back.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ecu_sim.runs import replay
from tests.conftest import Cli, Node, Udp, summary_of
from tests.helpers.nodebench import Bench

LINE = re.compile(r"\((?P<ts>[\d.]+)\) (?P<channel>\S+) (?P<id>[0-9A-F]+)#(?P<data>[0-9A-F]*) (?P<dir>[RT])$")
SPEED_ID = "18FEF125"


def frames(log: Path) -> list[re.Match[str]]:
    matches = [LINE.match(line) for line in log.read_text().splitlines()]
    assert all(matches), log.read_text()
    return [m for m in matches if m is not None]


def test_sent_frames_are_labelled_with_the_interface_they_were_sent_on(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    log = tmp_path / "ecu.log"
    result = cli_main("-i", "virtual", "-c", virtual_channel, "--record", str(log), "--duration", "2")
    assert result.status == 0, result.err
    sent = [m for m in frames(log) if m["dir"] == "T"]
    assert len(sent) == 20
    assert {m["channel"] for m in sent} == {virtual_channel}


def test_a_frame_the_bus_hands_back_is_recorded_once_as_sent(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    log = tmp_path / "ecu.log"
    result = cli_main("-i", "virtual", "-c", virtual_channel, "--bus-kwargs",
                      "receive_own_messages=True", "--record", str(log), "--duration", "2")
    assert result.status == 0, result.err
    assert re.search(r"\| echo \d+", result.err)  # the bus handed the node its own frames back ...
    own = [m for m in frames(log) if m["id"] == SPEED_ID]
    assert [m["dir"] for m in own] == ["T"] * 20  # ... and each is in the recording once
    assert cli_main("replay", str(log)).status == 0


@pytest.mark.slow
def test_a_closed_loop_on_udp_multicast_records_each_frame_once_in_time_order(
        tmp_path: Path, start: Callable[..., Node], udp: Udp, cli_main: Cli) -> None:
    log = tmp_path / "ecu.log"
    ecu = start(*udp.args(), "--record", str(log))
    ccm = start("ccm", *udp.args())
    ecu.wait_for(r"\| APP +\d")  # the ECU hears the CCM
    ecu.wait_for(r"ecu_sim: speed .* tx ([3-9]\d|\d{3,}) ")
    assert (ecu.stop(), ccm.stop()) == (0, 0), ecu.log
    recorded = frames(log)
    run = summary_of(ecu.log)
    own = [m for m in recorded if m["id"] == SPEED_ID]
    assert [m["dir"] for m in own] == ["T"] * run.tx  # every frame sent, none heard back twice
    assert {m["channel"] for m in own} == {udp.group}
    stamps = [float(m["ts"]) for m in recorded]
    assert stamps == sorted(stamps)
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0, replayed.err
    assert f"replayed {run.ticks} ticks" in replayed.out


def test_an_own_frame_a_bus_that_echoes_never_handed_back_is_left_out_and_its_tick_not_compared(
        tmp_path: Path) -> None:
    """On a bus that hands every frame back, one whose echo never came was not on the bus (a kernel
    timer sends the next payload instead after a late tick): the recording must not claim it."""
    log = tmp_path / "ecu.log"
    bench = Bench("ecu", record_to=str(log), echo=True)
    bench.tick(3)
    lost = bench.node_bus.queue.get_nowait()  # type: ignore[attr-defined]  # tick 2 not handed back
    assert lost.arbitration_id == int(SPEED_ID, 16)
    bench.tick(5)
    bench.port.recv(0.0)  # the last tick's echo, as a run waits for it before it stops
    bench.close()
    own = [m for m in frames(log) if m["id"] == SPEED_ID]
    assert [m["dir"] for m in own] == ["T"] * 7
    ticks = (tmp_path / "ecu.log.ticks").read_text().splitlines()[1:]
    assert ticks[2] == "0 0 f"
    result = replay.replay(str(log))
    assert result.identical and (result.ticks, result.frames, result.unverified) == (8, 7, 1)
