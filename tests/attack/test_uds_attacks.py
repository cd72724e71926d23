"""The attacks on the diagnostic door, staged by `ecu-sim simulate` against the class6 powertrain
network: each succeeds on the node with the flaw it needs and fails on the default node, the same
bytes on two runs, and CommunicationControl silences the engine."""

from __future__ import annotations

from pathlib import Path

import can

from ecu_sim.attack.plan import BENIGN
from ecu_sim.j1939.dm import unpack_dtcs
from ecu_sim.uds.codes import Nrc
from tests.conftest import Cli
from tests.helpers.attacked import POWERTRAIN, labelled

ENGINE, TOOL = 0x00, 0xF9
TO_ATTACKER = 0x18DAF900
FROM_ATTACKER = 0x18DA00F9
EEC1 = 0x0CF00400
UNLOCKED = b"\x02\x67\x02"
BRUTE = "weak-key+no-attempt-limit"


def staged(cli_main: Cli, folder: Path, attack: str, flaw: str = "none", duration: str = "8",
           name: str = "run") -> Path:
    """The labelled capture of a simulated run of ``attack`` against nodes with ``flaw``."""
    config, capture = folder / f"{name}.ini", folder / f"{name}.log"
    config.write_text(f"[diagnostics]\nflaw = {flaw}\n", encoding="ascii")
    result = cli_main("simulate", *POWERTRAIN, "--config", str(config), "--duration", duration,
                      "--attack", attack, "--capture", str(capture), "--out", str(folder / f"{name}.csv"))
    assert result.status == 0, result.err
    return capture


def answers(capture: Path) -> list[tuple[float, bytes]]:
    """(time, data) of the engine's frames to the attacker."""
    return [(msg.timestamp, bytes(msg.data)) for msg in can.CanutilsLogReader(str(capture))
            if msg.arbitration_id == TO_ATTACKER]


def refused(code: Nrc) -> bytes:
    return bytes((0x03, 0x7F, 0x27, code))


def test_a_brute_force_unlocks_a_node_with_a_weak_key_and_no_attempt_limit(cli_main: Cli,
                                                                          tmp_path: Path) -> None:
    capture = staged(cli_main, tmp_path, "bruteforce@1", BRUTE)
    got = [data for _, data in answers(capture)]
    assert any(data.startswith(UNLOCKED) for data in got)
    assert sum(data.startswith(refused(Nrc.INVALID_KEY)) for data in got) < 256


def test_the_lockout_stops_a_brute_force_on_the_default_node(cli_main: Cli, tmp_path: Path) -> None:
    capture = staged(cli_main, tmp_path, "bruteforce@1", duration="30")
    got = [data for _, data in answers(capture)]
    assert not any(data.startswith(UNLOCKED) for data in got)
    assert any(data.startswith(refused(Nrc.EXCEED_NUMBER_OF_ATTEMPTS)) for data in got)
    assert any(data.startswith(refused(Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED)) for data in got)


def test_a_brute_force_gives_the_same_bytes_on_two_runs(cli_main: Cli, tmp_path: Path) -> None:
    for flaw in (BRUTE, "none"):
        first = staged(cli_main, tmp_path, "bruteforce@1", flaw, name="first").read_bytes()
        assert staged(cli_main, tmp_path, "bruteforce@1", flaw, name="second").read_bytes() == first


def test_every_frame_of_a_brute_force_is_labelled_with_its_attack(cli_main: Cli, tmp_path: Path) -> None:
    frames = labelled(staged(cli_main, tmp_path, "bruteforce@1", BRUTE))
    assert {label for msg, label in frames if msg.arbitration_id == FROM_ATTACKER} == {1}
    assert {label for msg, label in frames if msg.arbitration_id == TO_ATTACKER} == {BENIGN}


def unlocked_by_replay(cli_main: Cli, folder: Path, kind: str, flaw: str) -> bool:
    got = answers(staged(cli_main, folder, f"{kind}@1", flaw, duration="4", name=f"{kind}-{flaw}"))
    (last,) = [data for _, data in got if data[1:3] in (b"\x67\x02", b"\x7f\x27")]
    return last.startswith(UNLOCKED)


def test_a_replayed_key_unlocks_a_node_with_a_static_seed(cli_main: Cli, tmp_path: Path) -> None:
    assert unlocked_by_replay(cli_main, tmp_path, "keyreplay", "static-seed")


def test_a_replayed_key_is_refused_by_the_default_node(cli_main: Cli, tmp_path: Path) -> None:
    assert not unlocked_by_replay(cli_main, tmp_path, "keyreplay", "none")


def test_the_key_of_the_seed_after_a_reset_unlocks_a_node_whose_seeds_restart(cli_main: Cli,
                                                                             tmp_path: Path) -> None:
    assert unlocked_by_replay(cli_main, tmp_path, "seedpredict", "reset-seed")


def test_the_seed_after_a_reset_is_not_the_predicted_one_on_the_default_node(cli_main: Cli,
                                                                            tmp_path: Path) -> None:
    assert not unlocked_by_replay(cli_main, tmp_path, "seedpredict", "none")


def eec1_times(capture: Path) -> list[float]:
    return [msg.timestamp for msg in can.CanutilsLogReader(str(capture)) if msg.arbitration_id == EEC1]


def test_communication_control_silences_the_engines_eec1_until_its_session_ends(cli_main: Cli,
                                                                               tmp_path: Path) -> None:
    times = eec1_times(staged(cli_main, tmp_path, "commctl@2+4", duration="14"))
    assert not [t for t in times if 2.1 <= t < 6.0]
    assert [t for t in times if t < 2.0] and [t for t in times if t >= 12.0]


def test_the_cruise_control_reports_the_wheel_speed_it_lost_while_the_engine_is_silent(
        cli_main: Cli, tmp_path: Path) -> None:
    dtcs: set[tuple[int, int]] = set()
    for msg in can.CanutilsLogReader(str(staged(cli_main, tmp_path, "commctl@2+4", duration="14"))):
        if msg.arbitration_id == 0x18FECA11:
            dtcs.update((d.spn, d.fmi) for d, _ in unpack_dtcs(bytes(msg.data)))
    assert (84, 9) in dtcs  # SPN 84, wheel-based vehicle speed: abnormal update rate


def test_first_frames_never_followed_fill_the_tracked_testers_and_the_rest_get_overflow(
        cli_main: Cli, tmp_path: Path) -> None:
    capture = staged(cli_main, tmp_path, "isotpff:count=12,rate=1200@1+0.01", duration="3")
    flow = [msg.data[0] for msg in can.CanutilsLogReader(str(capture))
            if msg.arbitration_id & 0xFFFF00FF == 0x18DA0000 and (msg.arbitration_id >> 8) & 0xFF >= 0x80]
    assert flow == [0x30] * 8 + [0x32] * 4


def test_a_flow_control_wait_without_end_is_given_up_and_no_consecutive_frame_goes(
        cli_main: Cli, tmp_path: Path) -> None:
    got = [data for _, data in answers(staged(cli_main, tmp_path, "fcwait@1+2", duration="4"))]
    assert [data[0] >> 4 for data in got] == [1, 1]  # two first frames, one a request, nothing after
