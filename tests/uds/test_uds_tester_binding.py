"""A session other than the default is the tester's that opened it: a physical request from
another tester is refused 0x22 and does not keep the session alive; functional requests are
served from anyone; once the session ends any tester may open the next. The ``any-tester`` flaw
takes the rule away."""

from __future__ import annotations

from ecu_sim.uds.codes import DiagnosticSession, Nrc
from ecu_sim.uds.security import default_key
from ecu_sim.uds.server import ERASE_S, S3_S
from tests.helpers.udsbench import PERIOD, Bench, BenchNode, ContractMemory, security

OTHER = 0xFA
IMAGE = bytes(63) + b"\x5a"


def refusal(service: int, code: Nrc) -> bytes:
    return bytes((0x7F, service, code))


def downloading(bench: Bench) -> None:
    """The bench's own tester (0xF9) in the programming session, erased, its download granted."""
    bench.program()
    bench.ask(0x31, 0x01, 0xFF, 0x00)
    bench.wait(ERASE_S + PERIOD)
    answer = bench.ask(0x34, 0x00, 0x44, 0, 0, 0x10, 0x00, 0, 0, 0, len(IMAGE))
    assert answer is not None and answer[0] == 0x74, answer


def key_from_another_tester(flaws: frozenset[str] = frozenset()) -> bytes | None:
    bench = Bench(guard=security(flaws=flaws))
    bench.ask(0x10, 0x03)
    seed = bench.ask(0x27, 0x01)
    assert seed is not None and seed[:2] == b"\x67\x01", seed
    return bench.ask(0x27, 0x02, *default_key(seed[2:], 1), tester=OTHER)


def test_a_download_block_from_another_tester_is_refused_and_the_owners_download_goes_on() -> None:
    memory = ContractMemory()
    bench = Bench(BenchNode(memory=memory))
    downloading(bench)
    assert bench.ask(0x36, 0x01, *IMAGE, tester=OTHER) == refusal(0x36, Nrc.CONDITIONS_NOT_CORRECT)
    assert memory.staged == bytearray(len(IMAGE))
    assert bench.ask(0x36, 0x01, *IMAGE) == b"\x76\x01"


def test_a_key_from_another_tester_inside_the_session_is_refused_with_0x22() -> None:
    assert key_from_another_tester() == refusal(0x27, Nrc.CONDITIONS_NOT_CORRECT)


def test_tester_present_from_another_tester_does_not_keep_the_session_alive() -> None:
    bench = Bench()
    bench.ask(0x10, 0x03)
    for _ in range(round(S3_S)):  # one a second, the last inside the first tester's S3
        assert bench.ask(0x3E, 0x00, tester=OTHER) == refusal(0x3E, Nrc.CONDITIONS_NOT_CORRECT)
        bench.wait(1.0)
    assert bench.server.session is DiagnosticSession.DEFAULT


def test_another_tester_cannot_end_the_session() -> None:
    bench = Bench()
    bench.ask(0x10, 0x03)
    assert bench.ask(0x10, 0x01, tester=OTHER) == refusal(0x10, Nrc.CONDITIONS_NOT_CORRECT)
    assert bench.server.session is DiagnosticSession.EXTENDED


def test_a_functional_request_from_another_tester_is_served_inside_the_session() -> None:
    bench = Bench()
    bench.ask(0x10, 0x03)
    answer = bench.ask(0x22, 0xF1, 0x90, functional=True, tester=OTHER)
    assert answer is not None and answer[:3] == b"\x62\xf1\x90"


def test_once_the_session_ended_another_tester_may_open_the_next() -> None:
    bench = Bench()
    bench.ask(0x10, 0x03)
    bench.wait(S3_S + PERIOD)
    answer = bench.ask(0x10, 0x03, tester=OTHER)
    assert answer is not None and answer[:2] == b"\x50\x03"


def test_the_any_tester_node_unlocks_for_a_key_from_another_tester() -> None:
    assert key_from_another_tester(frozenset({"any-tester"})) == b"\x67\x02"
