"""SecurityAccess: seeds that never repeat, the attempt counter and its delay, kept across restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecu_sim.uds.codes import Nrc
from ecu_sim.uds.security import RESERVED_SEEDS, SecurityStore, default_key, load_algorithm
from tests.helpers.udsbench import Bench, security


def refusal(code: Nrc) -> bytes:
    return bytes((0x7F, 0x27, code))


def seed_of(bench: Bench) -> bytes:
    answer = bench.ask(0x27, 0x01)
    assert answer is not None and answer[:2] == b"\x67\x01"
    return answer[2:]


def wrong_key(bench: Bench) -> bytes | None:
    seed = seed_of(bench)
    return bench.ask(0x27, 0x02, *(b ^ 0xFF for b in default_key(seed, 1)))


def extended(guard_path: Path | None = None, **kwargs: float) -> Bench:
    store = SecurityStore(None if guard_path is None else str(guard_path))
    bench = Bench(guard=security(store, **kwargs))  # type: ignore[arg-type]
    bench.ask(0x10, 0x03)
    return bench


def test_the_right_key_unlocks() -> None:
    bench = extended()
    seed = seed_of(bench)
    assert bench.ask(0x27, 0x02, *default_key(seed, 1)) == b"\x67\x02"


def test_an_unlocked_server_gives_a_seed_of_zeros() -> None:
    bench = extended()
    bench.ask(0x27, 0x02, *default_key(seed_of(bench), 1))
    assert seed_of(bench) == bytes(4)


def test_invalid_key_is_refused_with_0x35() -> None:
    assert wrong_key(extended()) == refusal(Nrc.INVALID_KEY)


def test_a_key_without_a_seed_is_a_request_sequence_error() -> None:
    assert extended().ask(0x27, 0x02, 1, 2, 3, 4) == refusal(Nrc.REQUEST_SEQUENCE_ERROR)


def test_exceeding_the_attempts_is_refused_with_0x36() -> None:
    bench = extended(attempts=3)
    assert [wrong_key(bench) for _ in range(4)] == [refusal(Nrc.INVALID_KEY)] * 3 + [
        refusal(Nrc.EXCEED_NUMBER_OF_ATTEMPTS)]


def test_during_the_delay_a_seed_is_refused_with_0x37() -> None:
    bench = extended(attempts=1, delay_s=2.0)
    wrong_key(bench), wrong_key(bench)
    assert bench.ask(0x27, 0x01) == refusal(Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED)


def test_after_the_delay_seeds_are_given_again() -> None:
    bench = extended(attempts=1, delay_s=2.0)
    wrong_key(bench), wrong_key(bench)
    for _ in range(3):
        bench.wait(1.0)
        bench.ask(0x3E, 0x00)
    assert len(seed_of(bench)) == 4


def test_ecu_reset_keeps_the_delay() -> None:
    bench = extended(attempts=1, delay_s=60.0)
    wrong_key(bench), wrong_key(bench)
    bench.ask(0x11, 0x01)
    bench.wait(0.1)
    bench.ask(0x10, 0x03)
    assert bench.ask(0x27, 0x01) == refusal(Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED)


def test_a_restart_keeps_the_attempt_counter(tmp_path: Path) -> None:
    path = tmp_path / "security.json"
    wrong_key(extended(path, attempts=2))
    wrong_key(extended(path, attempts=2))
    assert wrong_key(extended(path, attempts=2)) == refusal(Nrc.EXCEED_NUMBER_OF_ATTEMPTS)


def test_a_restart_during_the_delay_starts_it_again(tmp_path: Path) -> None:
    path = tmp_path / "security.json"
    bench = extended(path, attempts=0, delay_s=5.0)
    wrong_key(bench)
    restarted = extended(path, attempts=0, delay_s=5.0)
    assert restarted.ask(0x27, 0x01) == refusal(Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED)


def test_a_seed_never_repeats_after_a_reset() -> None:
    bench = extended()
    before = seed_of(bench)
    bench.ask(0x11, 0x01)
    bench.wait(0.1)
    bench.ask(0x10, 0x03)
    assert seed_of(bench) != before


def test_a_seed_never_repeats_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "security.json"
    seeds = {bytes(seed_of(extended(path))) for _ in range(20)}
    assert len(seeds) == 20


def test_seeds_are_the_same_in_two_runs_kept_in_memory() -> None:
    assert [seed_of(extended()) for _ in range(3)] == [seed_of(extended()) for _ in range(3)]


def test_an_unreadable_state_file_starts_with_a_delay(tmp_path: Path) -> None:
    path = tmp_path / "security.json"
    path.write_text("not json")
    assert extended(path).ask(0x27, 0x01) == refusal(Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED)


def test_a_users_key_algorithm_is_named_module_colon_function() -> None:
    assert load_algorithm("ecu_sim.uds.security:default_key") is default_key


@pytest.mark.parametrize("spec", ["nocolon", "no_such_module_xyz:key", "ecu_sim.uds.security:nothing"])
def test_a_key_algorithm_that_cannot_be_found_says_what_to_change(spec: str) -> None:
    with pytest.raises(ValueError, match="key_algorithm"):
        load_algorithm(spec)


def test_the_state_is_written_once_a_block_of_seeds_not_once_a_seed(tmp_path: Path) -> None:
    path = tmp_path / "security.json"
    bench = extended(path)

    def kept() -> int:
        return int(json.loads(path.read_text())["seed_counter"])

    seed_of(bench)
    first = kept()
    for _ in range(RESERVED_SEEDS - 1):
        seed_of(bench)
    unchanged = kept()
    seed_of(bench)
    assert (first, unchanged, kept()) == (RESERVED_SEEDS, RESERVED_SEEDS, 2 * RESERVED_SEEDS)
