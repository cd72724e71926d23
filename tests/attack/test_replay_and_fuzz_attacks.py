"""Replay of a recorded window and SPN-targeted fuzzing, staged by `ecu-sim simulate` against the
class6 powertrain network."""

from __future__ import annotations

from pathlib import Path

import can
import pytest

from ecu_sim.attack.plan import BENIGN
from ecu_sim.codec.profile import Profile
from ecu_sim.codec.spn import SignalLayout, carriers
from tests.conftest import Cli
from tests.helpers.attacked import POWERTRAIN, labelled, record, simulate


def injected(capture: Path, label: int = 1) -> list[can.Message]:
    return [msg for msg, got in labelled(capture) if got == label]


@pytest.mark.parametrize("suffix", ["log", "asc", "blf"])
def test_replay_sends_the_logs_window_at_its_recorded_spacing_inside_the_attacks(
        cli_main: Cli, tmp_path: Path, suffix: str) -> None:
    log = record(tmp_path / f"Recorded.{suffix}")  # a capital in the name: a path keeps its case
    capture, _ = simulate(cli_main, tmp_path, f"replay:file={log},from=0.5,to=1.5@2+2", duration="5")
    sent = [(round(msg.timestamp, 3), msg.arbitration_id, bytes(msg.data)) for msg in injected(capture)]
    assert sent == [(2.0, 0x18FF0003, bytes([2] * 8)), (2.02, 0x18FF0004, bytes([3] * 8)),
                    (2.5, 0x18FF0005, bytes([4] * 8))]


def test_replay_stops_at_the_attacks_window_whatever_the_log_holds(cli_main: Cli, tmp_path: Path) -> None:
    log = record(tmp_path / "recorded.log")
    capture, _ = simulate(cli_main, tmp_path, f"replay:file={log}@2+0.51", duration="4")
    assert [msg.arbitration_id for msg in injected(capture)] == [0x18FF0001, 0x18FF0002, 0x18FF0003]


@pytest.mark.parametrize(("spec", "says"), [
    ("replay:file={folder}/absent.log@1+1", "cannot read"),
    ("replay:file={folder}/recorded.log,from=2@1+1", "has no frame from 2 s"),
    ("replay@1+1", "replay needs file=LOG"),
])
def test_a_replay_that_cannot_be_sent_exits_2_with_one_line(cli_main: Cli, tmp_path: Path, spec: str,
                                                            says: str) -> None:
    record(tmp_path / "recorded.log")
    result = cli_main("simulate", *POWERTRAIN, "--duration", "3", "--attack", spec.format(folder=tmp_path))
    assert result.status == 2
    assert says in result.err and len(result.err.strip().splitlines()) == 1


ENGINE_SPEED = 190


def test_spn_fuzzing_sets_random_values_of_the_spn_and_keeps_the_genuine_senders_other_bytes(
        cli_main: Cli, tmp_path: Path) -> None:
    capture, _ = simulate(cli_main, tmp_path, f"fuzz:spn={ENGINE_SPEED},rate=100@1+1", duration="3")
    (message, signal), = carriers(Profile.load("j1939").database, ENGINE_SPEED)
    layout = SignalLayout.of(signal)
    unmasked = layout.with_raw((1 << 64) - 1, 8, 0)  # every bit but the SPN's
    genuine: bytes | None = None
    values = set()
    for msg, label in labelled(capture):
        if msg.arbitration_id != message.frame_id:
            continue
        if label == BENIGN:
            genuine = bytes(msg.data)
            continue
        assert genuine is not None
        fuzzed = int.from_bytes(msg.data, "little")
        assert fuzzed & unmasked == int.from_bytes(genuine, "little") & unmasked
        values.add(layout.raw(bytes(msg.data)))
    assert len(values) > 50  # 100 frames of a 16-bit field: random, not a constant


def test_fuzzing_takes_a_pgn_or_an_spn_not_both(cli_main: Cli) -> None:
    result = cli_main("simulate", *POWERTRAIN, "--duration", "2", "--attack", "fuzz:pgn=0xf004,spn=190")
    assert result.status == 2 and "pgn= or spn=, not both" in result.err
