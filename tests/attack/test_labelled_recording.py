"""Labels in the recording of an attacked `simulate` (``--record``): the tick journal's labels
lines and the MCAP file's ``/can/labels`` channel give every frame the ECU received the label the
attacker's ``--capture`` gives it, and the recording still replays bit for bit.

The MCAP file is read with the ``mcap`` library itself, not with ecu-sim's reader.
"""

from __future__ import annotations

import json
from pathlib import Path

import can
from mcap.reader import make_reader

from ecu_sim.attack.capture import read_labels
from ecu_sim.io import journal
from tests.conftest import Cli

POWERTRAIN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--no-progress")
#: windows that close before the run's end, so every attack frame reaches the ECU in a tick
ATTACKS = ("--attack", "tsc1:speed=2000@1+1", "--attack", "fuzz:rate=300@2+0.5", "--attack", "claim@3",
           "--attack-seed", "2")
#: a frame as the tests compare it: identifier, data, label
Labelled = tuple[int, bytes, int]


def simulate(cli_main: Cli, folder: Path, record: str, *args: str) -> Path:
    """A short simulate of ``args`` recorded to ``record`` in ``folder``; the recording's path."""
    result = cli_main("simulate", *POWERTRAIN, "--duration", "4", *args,
                      "--record", str(folder / record))
    assert result.status == 0, result.err
    return folder / record


def captured(capture: Path) -> list[Labelled]:
    """The capture's frames with their labels, in bus order."""
    _, labels = read_labels(str(capture))
    frames = can.CanutilsLogReader(str(capture))
    return [(msg.arbitration_id, bytes(msg.data), label) for msg, label in zip(frames, labels, strict=True)]


def captured_attacks(capture: Path) -> list[Labelled]:
    """The capture's frames an attack sent, in bus order."""
    return [frame for frame in captured(capture) if frame[2]]


def journal_labelled(log: Path) -> list[tuple[can.Message, int]]:
    """Each frame the log holds as received, with the label the journal gives it."""
    read = journal.read(journal.journal_path(str(log)), str(log))
    labels = [label for index, tick in enumerate(read.ticks)
              for label in read.labels.get(index, [0] * tick.rx)]
    received = [msg for msg in can.CanutilsLogReader(str(log)) if msg.is_rx]
    assert len(received) == len(labels)
    return list(zip(received, labels, strict=True))


def mcap_topic(path: Path, topic: str) -> list[tuple[int, dict[str, object]]]:
    """(log time, JSON message) of ``topic``, in the order written."""
    with path.open("rb") as handle:
        return [(message.log_time, json.loads(message.data))
                for _, _, message in make_reader(handle).iter_messages(topics=[topic], log_time_order=False)]


def test_the_journal_labels_the_frames_the_capture_labels_and_no_other(cli_main: Cli, tmp_path: Path) -> None:
    log = simulate(cli_main, tmp_path, "run.log", *ATTACKS, "--capture", str(tmp_path / "cap.log"))
    labelled = journal_labelled(log)
    attacked = [(m.arbitration_id, bytes(m.data), label) for m, label in labelled if label]
    assert attacked == captured_attacks(tmp_path / "cap.log")
    assert {label for _, label in labelled} == {0, 1, 2, 3}


def test_a_flood_the_ecu_drains_over_several_ticks_is_labelled_frame_by_frame(cli_main: Cli,
                                                                              tmp_path: Path) -> None:
    """Thousands of frames a second at the single node's 100 ms tick: more than one drain takes,
    so a tick's frames reach the ECU over several ticks; each still gets its own label."""
    log, capture = tmp_path / "run.log", tmp_path / "cap.log"
    result = cli_main("simulate", "--duration", "3", "--no-progress", "--attack", "fuzz:rate=3000@1+1",
                      "--attack", "request:rate=2000@1+1", "--attack-seed", "5",
                      "--record", str(log), "--capture", str(capture))
    assert result.status == 0, result.err
    labelled = journal_labelled(log)
    attacked = [(m.arbitration_id, bytes(m.data), label) for m, label in labelled if label]
    benign = [(m.arbitration_id, bytes(m.data)) for m, label in labelled if not label]
    # the run ends with part of the flood still queued: what the ECU took is the capture's start
    assert attacked == captured_attacks(capture)[:len(attacked)] and len(attacked) > 4000
    own = {m.arbitration_id for m in can.CanutilsLogReader(str(log)) if not m.is_rx}
    sent_to_it = [(i, d) for i, d, label in captured(capture) if not label and i not in own]
    assert benign == sent_to_it[:len(benign)] and len(benign) > len(sent_to_it) // 2


def test_the_journal_names_each_labels_attack_in_its_first_line(cli_main: Cli, tmp_path: Path) -> None:
    log = simulate(cli_main, tmp_path, "run.log", *ATTACKS)
    head = journal.read(journal.journal_path(str(log)), str(log)).head
    assert head["version"] == journal.VERSION
    assert [(a["label"], a["kind"], a["start_tick"]) for a in head["attacks"]] == [
        (1, "tsc1", 100), (2, "fuzz", 200), (3, "claim", 300)]


def test_the_mcap_label_channel_gives_every_frame_the_label_the_capture_gives_it(cli_main: Cli,
                                                                                 tmp_path: Path) -> None:
    path = simulate(cli_main, tmp_path, "run.mcap", *ATTACKS, "--capture", str(tmp_path / "cap.log"))
    frames, labels = mcap_topic(path, "/can/frames"), mcap_topic(path, "/can/labels")
    assert [label["frame"] for _, label in labels] == list(range(len(frames)))
    for (frame_time, frame), (label_time, label) in zip(frames, labels, strict=True):
        assert (label_time, label["id"], label["direction"]) == (frame_time, frame["id"], frame["direction"])
    attacked = [(frame["id"], bytes.fromhex(str(frame["data"])), label["label"])
                for (_, frame), (_, label) in zip(frames, labels, strict=True) if label["label"]]
    assert attacked == captured_attacks(tmp_path / "cap.log")
    kinds = {(label["label"], label["attack"]) for _, label in labels}
    assert kinds == {(0, "benign"), (1, "tsc1"), (2, "fuzz"), (3, "claim")}


def test_the_ecus_own_frames_are_labelled_benign_in_the_mcap(cli_main: Cli, tmp_path: Path) -> None:
    path = simulate(cli_main, tmp_path, "run.mcap", *ATTACKS)
    sent = [label for _, label in mcap_topic(path, "/can/labels") if label["direction"] == "tx"]
    assert sent and all(label["label"] == 0 and label["attack"] == "benign" for label in sent)


def test_an_attacked_simulations_recording_replays_bit_for_bit(cli_main: Cli, tmp_path: Path) -> None:
    for name in ("run.log", "run.mcap"):
        path = simulate(cli_main, tmp_path, name, *ATTACKS)
        replayed = cli_main("replay", str(path))
        assert replayed.status == 0, replayed.err
        said = replayed.out + replayed.err
        assert "ECU replayed 400 ticks (4.0 s)" in said and "bit for bit as recorded" in said


def test_the_same_attacked_case_records_the_same_log_and_journal_ticks(cli_main: Cli, tmp_path: Path) -> None:
    first = simulate(cli_main, tmp_path, "first.log", *ATTACKS)
    second = simulate(cli_main, tmp_path, "second.log", *ATTACKS)
    assert first.read_bytes() == second.read_bytes()
    ticks = [journal.journal_path(str(path)) for path in (first, second)]
    assert Path(ticks[0]).read_text().splitlines()[1:] == Path(ticks[1]).read_text().splitlines()[1:]


def test_an_unattacked_simulations_recording_has_no_labels(cli_main: Cli, tmp_path: Path) -> None:
    log = simulate(cli_main, tmp_path, "run.log")
    mcap = simulate(cli_main, tmp_path, "run.mcap")
    lines = Path(journal.journal_path(str(log))).read_text().splitlines()
    assert not [line for line in lines if line.startswith("labels ")]
    assert mcap_topic(mcap, "/can/labels") == [] and mcap_topic(mcap, "/can/frames")
