"""``--record FILE.mcap``: the frames and decoded signals of a run, read back with the ``mcap`` reader,
equal the candump recording of the same run; ``ecu-sim replay FILE.mcap`` is bit for bit."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import can
import pytest
from mcap.reader import make_reader

from ecu_sim.codec.profile import Profile
from tests.conftest import Cli
from tests.helpers.busclock import Peer, peer

__all__ = ["peer"]


def read_back(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every message of the file by topic, in the order written, with the mcap package's reader."""
    topics: dict[str, list[dict[str, Any]]] = {}
    with path.open("rb") as handle:
        for _, channel, message in make_reader(handle).iter_messages(log_time_order=False):
            topics.setdefault(channel.topic, []).append(json.loads(message.data))
    return topics


def record_both(cli_main: Cli, peer: Peer, tmp_path: Path, command: str) -> tuple[Path, Path]:
    """The same run (same input, same ticks) recorded as .mcap and as candump .log."""
    peer.role = "app" if command == "run" else "speed"
    paths = tmp_path / "node.mcap", tmp_path / "node.log"
    for path in paths:
        result = cli_main(command, *peer.args, "--duration", "4", "--record", str(path))
        assert result.status == 0, result.err
    return paths


@pytest.mark.parametrize("command", ["run", "ccm"])
def test_the_mcap_frames_are_the_candump_frames_of_the_same_run(
        cli_main: Cli, peer: Peer, tmp_path: Path, command: str) -> None:
    mcap, log = record_both(cli_main, peer, tmp_path, command)
    frames = read_back(mcap)["/can/frames"]
    logged = list(can.LogReader(str(log)))
    assert [(f["id"], bytes.fromhex(f["data"]), f["direction"] == "rx") for f in frames] == \
        [(m.arbitration_id, bytes(m.data), m.is_rx) for m in logged]


@pytest.mark.parametrize("command", ["run", "ccm"])
def test_the_decoded_signals_count_and_equal_the_candump_frames_decoded_by_the_dbc(
        cli_main: Cli, peer: Peer, tmp_path: Path, command: str) -> None:
    mcap, log = record_both(cli_main, peer, tmp_path, command)
    topics = read_back(mcap)
    database = Profile.load("amp").database
    expected: dict[str, list[dict[str, float]]] = {}
    for msg in can.LogReader(str(log)):
        try:
            message = database.get_message_by_frame_id(msg.arbitration_id)
        except KeyError:
            continue
        values = message.decode(bytes(msg.data), decode_choices=False)
        assert isinstance(values, dict)
        expected.setdefault(f"/signals/{message.name}", []).append(
            {name: float(value) for name, value in values.items()})  # type: ignore[arg-type]
    signal_topics = {topic: [{k: v for k, v in m.items() if k not in ("tick", "direction", "key")}
                             for m in messages]
                     for topic, messages in topics.items() if topic.startswith("/signals/")}
    assert Counter({t: len(m) for t, m in signal_topics.items()}) == \
        Counter({t: len(m) for t, m in expected.items()})
    assert signal_topics == expected
    assert set(expected) == {"/signals/CCVS1", "/signals/EEC2"}


def test_the_ticks_topic_holds_one_message_per_tick_with_the_journal_counts(
        cli_main: Cli, peer: Peer, tmp_path: Path) -> None:
    mcap, log = record_both(cli_main, peer, tmp_path, "run")
    ticks = read_back(mcap)["/ticks"]
    journal = [line.split() for line in Path(f"{log}.ticks").read_text().splitlines()[1:-1]]
    assert [(t["tick"], t["rx"], t["tx"]) for t in ticks] == \
        [(k, int(rx), int(tx)) for k, (rx, tx) in enumerate(journal)]
    # the model's APP of each tick is the APP frame that tick received, decoded
    assert all(t["ecu"]["state"]["app_pct"] == t["ecu"]["rx"]["EEC2 PGN 61443 SA 0x26"]["AccelPedalPos1"]
               for t in ticks)


@pytest.mark.parametrize("command", ["run", "ccm"])
def test_an_mcap_recording_replays_bit_for_bit(
        cli_main: Cli, peer: Peer, tmp_path: Path, command: str) -> None:
    peer.role = "app" if command == "run" else "speed"
    path = tmp_path / "node.mcap"
    assert cli_main(command, *peer.args, "--duration", "4", "--record", str(path)).status == 0
    result = cli_main("replay", str(path))
    assert result.status == 0, result.err
    assert "replayed 40 ticks (4.0 s): 40 frames sent bit for bit as recorded" in result.out


def test_a_changed_frame_in_an_mcap_recording_is_reported_at_its_tick(
        cli_main: Cli, peer: Peer, tmp_path: Path) -> None:
    from mcap.writer import Writer

    path, edited = tmp_path / "ecu.mcap", tmp_path / "edited.mcap"
    assert cli_main(*peer.args, "--duration", "4", "--record", str(path)).status == 0
    with path.open("rb") as source, edited.open("wb") as target:
        reader, writer = make_reader(source), Writer(target)
        writer.start()
        for item in reader.iter_metadata():
            writer.add_metadata(item.name, dict(item.metadata))
        channels: dict[int, int] = {}
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            if channel.id not in channels:
                assert schema is not None
                schema_id = writer.register_schema(schema.name, schema.encoding, schema.data)
                channels[channel.id] = writer.register_channel(channel.topic, channel.message_encoding,
                                                               schema_id)
            record = json.loads(message.data)
            if channel.topic == "/can/frames" and record["direction"] == "tx" and record["tick"] == 25:
                record["data"] = "ffffffffff0050ff"  # 80 km/h
            writer.add_message(channels[channel.id], message.log_time, json.dumps(record).encode(),
                               message.publish_time, message.sequence)
        writer.finish()  # type: ignore[no-untyped-call]
    result = cli_main("replay", str(edited))
    assert result.status == 1 and "differs at tick 25 (t = 2.5 s): recorded 18FEF125#FFFFFFFFFF0050FF" \
        in result.err


def test_a_file_that_is_not_mcap_exits_2_naming_it(cli_main: Cli, tmp_path: Path) -> None:
    path = tmp_path / "ecu.mcap"
    path.write_bytes(b"not an mcap file at all")
    result = cli_main("replay", str(path))
    assert result.status == 2 and f"{path} cannot be read as MCAP" in result.err


def test_an_mcap_recording_cannot_be_split_by_size(cli_main: Cli, peer: Peer, tmp_path: Path) -> None:
    result = cli_main(*peer.args, "--duration", "1", "--record", str(tmp_path / "ecu.mcap"),
                      "--record-max-bytes", "100000")
    assert result.status == 2 and "max_bytes cannot split an .mcap recording" in result.err
