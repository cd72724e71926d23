"""Attacks in `simulate`: on ticks, labelled, the same frames on every run, with their effect.

Each test runs `ecu-sim simulate` against the class6 truck's powertrain network with an attacker
and a labelled capture, then reads what the capture and the trace hold.
"""

from __future__ import annotations

from pathlib import Path

from ecu_sim.attack.capture import SUFFIX
from ecu_sim.attack.plan import BENIGN
from ecu_sim.j1939.checksum import IntegrityVerdict
from ecu_sim.j1939.ids import pgn_of, source_address_of
from tests.conftest import Cli
from tests.helpers.attacked import labelled, simulate

ATTACKER_SA = 0x2A
ADDRESS_CLAIMED = 60928
CANNOT_CLAIM_SA = 0xFE


def test_the_same_attacked_case_gives_the_same_labelled_frames_bit_for_bit(cli_main: Cli,
                                                                           tmp_path: Path) -> None:
    attacks = ("tsc1:speed=2000@1+2", "fuzz:rate=500@2+1", "request:rate=300@3+1", "claim@5")
    first, _ = simulate(cli_main, tmp_path, *attacks, name="first")
    second, _ = simulate(cli_main, tmp_path, *attacks, name="second")
    assert first.read_bytes() == second.read_bytes()
    assert Path(f"{first}{SUFFIX}").read_bytes() == Path(f"{second}{SUFFIX}").read_bytes()


def test_another_seed_gives_other_random_frames(cli_main: Cli, tmp_path: Path) -> None:
    one, _ = simulate(cli_main, tmp_path, "fuzz:rate=500@1+1", seed="1", name="one")
    two, _ = simulate(cli_main, tmp_path, "fuzz:rate=500@1+1", seed="2", name="two")
    assert one.read_bytes() != two.read_bytes()


def test_an_attacks_frames_are_labelled_with_it_and_lie_in_its_window(cli_main: Cli, tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "tsc1:speed=2000@1+2", "request:rate=250@4+2")
    frames = labelled(capture)
    tsc1 = [msg for msg, label in frames if label == 1]
    requests = [msg for msg, label in frames if label == 2]
    assert len(tsc1) == 200 and all(1.0 <= msg.timestamp < 3.0 for msg in tsc1)
    assert len(requests) == 500 and all(4.0 <= msg.timestamp < 6.0 for msg in requests)


def test_every_frame_the_attacker_did_not_send_is_labelled_benign(cli_main: Cli, tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "tsc1:speed=2000@1+2")
    frames = labelled(capture)
    benign = [msg for msg, label in frames if label == BENIGN]
    assert all(source_address_of(msg.arbitration_id) != ATTACKER_SA for msg in benign)
    assert sum(label == BENIGN for _, label in frames) > 1000


def test_injected_tsc1_carries_a_valid_counter_and_checksum_and_takes_the_engine(cli_main: Cli,
                                                                                 tmp_path: Path) -> None:
    from ecu_sim.codec.integrity import integrity_of
    from ecu_sim.codec.profile import Profile

    capture, rows = simulate(cli_main, tmp_path, "tsc1:speed=2000@1+2")
    integrity = integrity_of(Profile.load("j1939").database.get_message_by_name("TSC1"))
    assert integrity is not None
    tsc1 = [msg for msg, label in labelled(capture) if label == 1]
    assert {integrity.verify(msg.arbitration_id, bytes(msg.data)) for msg in tsc1} == {IntegrityVerdict.OK}
    assert [integrity.counter.read(bytes(msg.data)) for msg in tsc1[:9]] == [0, 1, 2, 3, 4, 5, 6, 7, 0]
    controlling = {int(row["controlling_address"]) for row in rows if 1.5 <= float(row["t_s"]) < 3.0}
    assert controlling == {ATTACKER_SA}


def test_injected_xbr_brakes_the_truck_in_its_window(cli_main: Cli, tmp_path: Path) -> None:
    _, rows = simulate(cli_main, tmp_path, "xbr:accel=-4@2+2")
    braking = [float(row["accel_mps2"]) for row in rows if 2.5 <= float(row["t_s"]) < 4.0]
    before = [float(row["accel_mps2"]) for row in rows if float(row["t_s"]) < 2.0]
    assert max(braking) < -3.0 < min(before)


def test_the_address_claim_attack_silences_the_engine_with_cannot_claim(cli_main: Cli,
                                                                         tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "claim:target=0x00@2")
    frames = labelled(capture)
    attack_at = next(msg.timestamp for msg, label in frames if label == 1)
    cannot_claim = [msg for msg, label in frames if label == BENIGN and pgn_of(msg.arbitration_id) ==
                    ADDRESS_CLAIMED and source_address_of(msg.arbitration_id) == CANNOT_CLAIM_SA]
    assert cannot_claim and cannot_claim[0].timestamp >= attack_at
    engine_after = [msg for msg, label in frames if label == BENIGN and msg.timestamp > attack_at + 1.0
                    and source_address_of(msg.arbitration_id) == 0x00]
    assert engine_after == []


def test_dm1_spoofed_in_the_engines_name_is_labelled_apart_from_the_engines_own(cli_main: Cli,
                                                                                tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "dm1:source=0x00,spn=91,fmi=9,rate=2@1+3")
    spoofed = [msg for msg, label in labelled(capture) if label == 1]
    assert len(spoofed) == 6
    assert all(msg.arbitration_id & 0x3FFFFFF == 0x18FECA00 & 0x3FFFFFF for msg in spoofed)


def test_a_masquerade_is_the_victim_silenced_then_its_messages_sent_in_its_name(cli_main: Cli,
                                                                              tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, "claim:target=0x00@2",
                          "spoof:message=eec1,spn=190,value=3000@4+2")
    frames = labelled(capture)
    from_engine = [(msg, label) for msg, label in frames if 4.0 <= msg.timestamp < 6.0
                   and source_address_of(msg.arbitration_id) == 0x00]
    assert from_engine and {label for _, label in from_engine} == {2}
