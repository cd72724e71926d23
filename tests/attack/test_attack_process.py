"""`ecu-sim attack` as a process of its own on a real python-can bus, heard by an independent client
and obeyed by the ECU's own process."""

from __future__ import annotations

import itertools
import subprocess
import time
from pathlib import Path

import can

import ecu_sim
from ecu_sim.attack.capture import read_labels
from ecu_sim.codec.integrity import integrity_of
from ecu_sim.codec.profile import Profile
from ecu_sim.j1939.checksum import IntegrityVerdict
from ecu_sim.j1939.ids import pgn_of, source_address_of
from ecu_sim.j1939.transport import ABORT, ABORT_RETRANSMIT_LIMIT
from tests.conftest import HANG_S, Udp, clean_env, ecu_sim_command

TSC1_TO_ENGINE = 0x0C00002A
EEC1_PGN = 0xF004
#: EEC1's byte of SPN 1483, the source address of the device controlling the engine
CONTROLLER_BYTE = 5
ATTACKER_SA = 0x2A
#: a TP.CM from the engine (0x00) to the off-board tool's address (0xF9), where `cts` asks from
ENGINE_TO_TOOL_CM = 0x1CECF900


def heard_until(bus: can.BusABC, process: subprocess.Popen[str], wanted: object = None) -> list[can.Message]:
    """Every frame on ``bus`` until ``process`` ends (or, with ``wanted``, a frame it accepts)."""
    frames: list[can.Message] = []
    give_up = time.monotonic() + HANG_S
    while time.monotonic() < give_up:
        msg = bus.recv(0.05)
        if msg is not None:
            frames.append(msg)
            if callable(wanted) and wanted(msg):
                return frames
        elif process.poll() is not None and wanted is None:
            return frames
    raise AssertionError(f"gave up after {HANG_S} s")


def test_the_attack_process_sends_tsc1_a_receiver_accepts_with_its_counter_running_on(
        udp: Udp, udp_bus: can.BusABC, tmp_path: Path) -> None:
    capture = tmp_path / "attack.log"
    process = subprocess.Popen(ecu_sim_command("attack", *udp.args(), "--attack", "tsc1:speed=2000@0+1",
                                               "--capture", str(capture)),
                               env=clean_env(), text=True, stderr=subprocess.PIPE)
    frames = heard_until(udp_bus, process)
    assert process.wait(HANG_S) == 0, process.stderr.read() if process.stderr else ""
    tsc1 = [msg for msg in frames if msg.arbitration_id == TSC1_TO_ENGINE]
    integrity = integrity_of(Profile.load("j1939").database.get_message_by_name("TSC1"))
    assert integrity is not None
    assert 0 < len(tsc1) <= 100
    assert {integrity.verify(msg.arbitration_id, bytes(msg.data)) for msg in tsc1} == {IntegrityVerdict.OK}
    # UDP may drop a datagram, so what was heard is held to rules a loss keeps: each heard counter
    # runs on from the one heard before it, and the capture labels at least every frame heard
    counters = [integrity.counter.read(bytes(msg.data)) for msg in tsc1]
    assert all((b - a) % 8 >= 1 for a, b in itertools.pairwise(counters))
    header, labels = read_labels(str(capture))
    assert labels.count(1) >= len(tsc1) > 0
    assert header["ecu_sim_version"] == ecu_sim.__version__  # the header docs/attacks.md promises


def test_the_ecu_process_hands_its_engine_to_the_attackers_tsc1(udp: Udp, udp_bus: can.BusABC) -> None:
    ecu = subprocess.Popen(ecu_sim_command("--vehicle", "class6", "--profile", "j1939", "--network",
                                           "powertrain", *udp.args(), "--duration", str(HANG_S)),
                           env=clean_env(), text=True, stderr=subprocess.DEVNULL)
    try:
        def eec1(msg: can.Message) -> bool:
            return pgn_of(msg.arbitration_id) == EEC1_PGN and source_address_of(msg.arbitration_id) == 0
        heard_until(udp_bus, ecu, eec1)
        attack = subprocess.Popen(ecu_sim_command("attack", *udp.args(), "--attack",
                                                  f"tsc1:speed=2000@0+{HANG_S / 2:g}"),
                                  env=clean_env(), text=True, stderr=subprocess.DEVNULL)
        try:
            heard_until(udp_bus, attack, lambda msg: eec1(msg) and msg.data[CONTROLLER_BYTE] == ATTACKER_SA)
        finally:
            attack.terminate()
            attack.wait(HANG_S)
    finally:
        ecu.terminate()
        ecu.wait(HANG_S)


def test_the_attack_process_answers_the_ecu_processs_rts_with_a_cts_past_the_end_and_gets_abort_5(
        udp: Udp, udp_bus: can.BusABC) -> None:
    ecu = subprocess.Popen(ecu_sim_command("--vehicle", "class6", "--profile", "j1939", "--network",
                                           "powertrain", *udp.args(), "--duration", str(HANG_S)),
                           env=clean_env(), text=True, stderr=subprocess.DEVNULL)
    try:
        heard_until(udp_bus, ecu, lambda msg: pgn_of(msg.arbitration_id) == EEC1_PGN)
        # the session starts again every second, so a datagram UDP drops only delays the answer
        attack = subprocess.Popen(ecu_sim_command("attack", *udp.args(), "--attack",
                                                  f"cts:every=1@0+{HANG_S / 2:g}"),
                                  env=clean_env(), text=True, stderr=subprocess.DEVNULL)
        try:
            heard_until(udp_bus, attack, lambda msg: msg.arbitration_id == ENGINE_TO_TOOL_CM
                        and bytes(msg.data[:2]) == bytes([ABORT, ABORT_RETRANSMIT_LIMIT]))
        finally:
            attack.terminate()
            attack.wait(HANG_S)
    finally:
        ecu.terminate()
        ecu.wait(HANG_S)
