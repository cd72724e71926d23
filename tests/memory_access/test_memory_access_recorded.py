"""The reference's recorded DM14 read and write, replayed against the node byte for byte."""

from __future__ import annotations

from tests.helpers.membench import RECORDED_IDENTITY, MemBench, inverted

FF = bytes([0xFF] * 6)


def frames(text: str) -> list[tuple[int, bytes]]:
    """``ID BYTES...`` lines as (identifier, data)."""
    rows = [line.split() for line in text.strip().splitlines()]
    return [(int(row[0], 16), bytes(int(b, 16) for b in row[1:])) for row in rows]


Frames = list[tuple[int, bytes]]


def replay(bench: MemBench, recording: Frames, tool_ids: set[int]) -> Frames:
    """The tool's frames of ``recording`` sent one a tick; all frames of both sides, in order."""
    seen: Frames = []
    for can_id, data in recording:
        if can_id in tool_ids:
            seen.append((can_id, data))
            bench.send(can_id, data)
            seen += bench.run()
    return seen + bench.run(3)


def test_the_recorded_read_is_answered_byte_for_byte() -> None:
    recording = frames("""
        18D9D4F9 01 13 03 00 00 92 07 00
        1CD8F9D4 00 11 FF FF FF FF 5A A5
        18D9D4F9 01 13 03 00 00 92 A5 5A
        1CD8F9D4 01 11 FF FF FF FF FF FF
        1CD7F9D4 01 01 FF FF FF FF FF FF
        1CD8F9D4 00 19 FF FF FF FF FF FF
        18D9D4F9 01 19 03 00 00 92 FF FF
    """)
    bench = MemBench(identity=RECORDED_IDENTITY, algorithm=inverted)
    assert replay(bench, recording, {0x18D9D4F9}) == recording


def test_the_recorded_write_is_answered_byte_for_byte_and_stages_its_bytes() -> None:
    recording = frames("""
        18D9D4F9 04 15 03 00 00 92 07 00
        1CD8F9D4 00 11 FF FF FF FF 5A A5
        18D9D4F9 04 15 03 00 00 92 A5 5A
        1CD8F9D4 04 11 FF FF FF FF FF FF
        18D7D4F9 04 44 33 22 11
        1CD8F9D4 00 19 FF FF FF FF FF FF
        18D9D4F9 01 19 03 00 00 92 FF FF
    """)
    bench = MemBench(identity=RECORDED_IDENTITY, algorithm=inverted)
    assert replay(bench, recording, {0x18D9D4F9, 0x18D7D4F9}) == recording
    # four bytes inside the limit, without the integrity field: staged, not run
    assert bench.memory.active.data == MemBench().memory.active.data
    assert bench.server.incomplete == 1 and bench.truck.applied == 0
