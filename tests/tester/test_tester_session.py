"""A script's steps as the requests they send, held against a node's real ISO-TP layer and UDS
server with a programmable memory: the unlock, the erase's 0x78, the download's blocks."""

from __future__ import annotations

from pathlib import Path

from ecu_sim.calibration.files import write_image
from ecu_sim.calibration.layout import AREA_SIZE, AREA_START
from ecu_sim.nodes.calibrated import builtin_image
from ecu_sim.tester.script import ImageDownload, ScriptStep, load_script
from ecu_sim.tester.session import ScriptedSession, StepRecord, requests
from ecu_sim.uds.security import default_key
from tests.helpers.powertrainrig import settings
from tests.helpers.udsbench import PERIOD, BenchNode, ContractMemory, endpoint

SLOW = builtin_image("engine", settings()).changed({"road_speed_limit_kph": 60.0}, "SLOW-60")
REFLASH = ("0.1 0x00 session extended", "0.2 0x00 session programming", "0.3 0x00 unlock",
           "0.4 0x00 erase", "0.5 0x00 download slow.s19")


def held(folder: Path, *lines: str, seconds: float = 3.0) -> tuple[list[StepRecord], ContractMemory]:
    """The script of ``lines`` against a standing node with memory; its rows and the memory."""
    write_image(SLOW, folder / "slow.s19")
    (folder / "s.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    memory = ContractMemory(AREA_START, AREA_SIZE)
    node = endpoint(BenchNode(memory=memory))
    session = ScriptedSession(load_script(str(folder / "s.txt")), PERIOD, default_key)
    for tick in range(round(seconds / PERIOD)):
        for can_id, data in node.tick(tick):
            session.receive(can_id, data)
        for can_id, data in session.tick(tick):
            node.receive(can_id, data)
    assert session.done
    return session.rows, memory


def test_a_reflash_script_erases_then_writes_the_image_into_the_nodes_memory(tmp_path: Path) -> None:
    rows, memory = held(tmp_path, *REFLASH)
    firsts = [(row.request[:1].hex(), None if row.answer is None else row.answer[:1].hex()) for row in rows]
    assert firsts == [
        ("10", "50"), ("10", "50"), ("27", "67"), ("27", "67"), ("31", "71"), ("34", "74"), ("36", "76"),
        ("37", "77")]
    assert memory.erased == 1 and bytes(memory.staged) == SLOW.data


def test_the_erase_is_answered_when_it_is_done_after_response_pending(tmp_path: Path) -> None:
    rows, _ = held(tmp_path, *REFLASH)
    erase = rows[4]
    assert erase.answer == bytes.fromhex("7101FF00") and erase.answer_s - erase.sent_s >= 0.5


def test_unlock_sends_the_key_of_the_seed_it_was_given(tmp_path: Path) -> None:
    rows, _ = held(tmp_path, *REFLASH[:3])
    seed, key = rows[2], rows[3]
    assert seed.answer is not None and key.request == b"\x27\x02" + default_key(seed.answer[2:], 1)


def test_a_download_refused_sends_no_data(tmp_path: Path) -> None:
    rows, _ = held(tmp_path, "0.1 0x00 download slow.s19")
    assert [(row.request[0], row.answer) for row in rows] == [(0x34, bytes.fromhex("7F347F"))]


def test_a_download_goes_in_blocks_as_long_as_the_node_grants_counting_from_one() -> None:
    image = ImageDownload("x.s19", 0x80000, bytes(range(250)))
    sent = requests(ScriptStep(1, 0.0, 0x00, "download", image, "0x00 download x.s19"), default_key)
    first = next(sent)
    blocks = [sent.send(bytes.fromhex("74200066"))]  # 0x66: 102 bytes a request, 100 of them data
    while blocks[-1][0] == 0x36:
        blocks.append(sent.send(bytes((0x76, blocks[-1][1]))))
    assert first == bytes.fromhex("340044" "00080000" "000000FA")
    assert [(block[:2].hex(), len(block)) for block in blocks] == [
        ("3601", 102), ("3602", 102), ("3603", 52), ("37", 1)]
    assert b"".join(block[2:] for block in blocks[:3]) == image.data
