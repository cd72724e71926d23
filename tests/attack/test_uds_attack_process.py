"""`ecu-sim attack` on the diagnostic door as a process of its own against the ECU's own process:
the brute force unlocks a node with a weak key and no attempt limit in real time."""

from __future__ import annotations

import subprocess
from pathlib import Path

import can

from ecu_sim.j1939.ids import pgn_of
from tests.attack.test_attack_process import EEC1_PGN, heard_until
from tests.conftest import HANG_S, Udp, clean_env, ecu_sim_command

TO_ATTACKER = 0x18DAF900


def test_the_attack_process_brute_forces_the_key_of_a_flawed_ecu_process(udp: Udp, udp_bus: can.BusABC,
                                                                         tmp_path: Path) -> None:
    config = tmp_path / "flawed.ini"
    config.write_text("[diagnostics]\nflaw = weak-key+no-attempt-limit\n", encoding="ascii")
    ecu = subprocess.Popen(ecu_sim_command("--config", str(config), "--vehicle", "class6", "--profile",
                                           "j1939", "--network", "powertrain", *udp.args(),
                                           "--duration", str(HANG_S)),
                           env=clean_env(), text=True, stderr=subprocess.DEVNULL)
    try:
        heard_until(udp_bus, ecu, lambda msg: pgn_of(msg.arbitration_id) == EEC1_PGN)
        # a datagram UDP drops costs a retry (1 s): the attack asks again when no answer came
        attack = subprocess.Popen(ecu_sim_command("attack", *udp.args(), "--attack",
                                                  f"bruteforce@0+{HANG_S / 2:g}"),
                                  env=clean_env(), text=True, stderr=subprocess.DEVNULL)
        try:
            heard_until(udp_bus, attack, lambda msg: msg.arbitration_id == TO_ATTACKER
                        and bytes(msg.data[:3]) == b"\x02\x67\x02")
        finally:
            attack.terminate()
            attack.wait(HANG_S)
    finally:
        ecu.terminate()
        ecu.wait(HANG_S)
