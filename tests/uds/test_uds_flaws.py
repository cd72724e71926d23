"""The flaws a node can be given (``[diagnostics] flaw``): each undoes one rule of security access,
and the node without any keeps them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecu_sim.settings.diagnostics import DiagnosticsSettings
from ecu_sim.uds.codes import Nrc
from ecu_sim.uds.security import Security, SecurityStore, default_key
from tests.helpers.udsbench import Bench, security


def flawed(*flaws: str, path: Path | None = None) -> Bench:
    store = SecurityStore(None if path is None else str(path))
    bench = Bench(guard=security(store, flaws=frozenset(flaws)))
    bench.ask(0x10, 0x03)
    return bench


def seed_of(bench: Bench) -> bytes:
    answer = bench.ask(0x27, 0x01)
    assert answer is not None and answer[:2] == b"\x67\x01", answer
    return answer[2:]


def reset(bench: Bench) -> None:
    bench.ask(0x11, 0x01)
    bench.wait(0.1)
    bench.ask(0x10, 0x03)


def test_a_static_seed_is_the_same_every_time() -> None:
    bench = flawed("static-seed")
    first = seed_of(bench)
    bench.ask(0x27, 0x02, 0, 0, 0, 0)
    assert seed_of(bench) == first


def test_a_reset_seed_node_gives_after_a_reset_the_seeds_it_gave_after_the_last() -> None:
    bench = flawed("reset-seed")
    after_start = [seed_of(bench), seed_of(bench)]
    reset(bench)
    assert [seed_of(bench), seed_of(bench)] == after_start


def test_a_reset_seed_node_repeats_its_seeds_after_a_restart_whatever_was_kept(tmp_path: Path) -> None:
    path = tmp_path / "security.json"
    assert seed_of(flawed("reset-seed", path=path)) == seed_of(flawed("reset-seed", path=path))


def test_the_default_node_never_repeats_a_seed_after_a_reset() -> None:
    bench = flawed()
    before = seed_of(bench)
    reset(bench)
    assert seed_of(bench) != before


def test_no_attempt_limit_answers_every_invalid_key_with_0x35() -> None:
    bench = flawed("no-attempt-limit")
    answers = set()
    for _ in range(20):
        seed_of(bench)
        answers.add(bench.ask(0x27, 0x02, 0, 0, 0, 0))
    assert answers == {bytes((0x7F, 0x27, Nrc.INVALID_KEY))}


def test_a_weak_key_is_found_by_at_most_256_guesses() -> None:
    bench = flawed("weak-key", "no-attempt-limit")
    for guess in range(256):
        seed_of(bench)
        if bench.ask(0x27, 0x02, 0, 0, 0, guess) == b"\x67\x02":
            return
    pytest.fail("no guess of the last byte unlocked")


def test_a_weak_key_node_still_takes_the_genuine_key() -> None:
    bench = flawed("weak-key")
    assert bench.ask(0x27, 0x02, *default_key(seed_of(bench), 1)) == b"\x67\x02"


def test_the_default_node_refuses_a_key_right_in_its_last_byte_alone() -> None:
    bench = flawed()
    key = bytearray(default_key(seed_of(bench), 1))
    key[0] ^= 0xFF
    assert bench.ask(0x27, 0x02, *key) == bytes((0x7F, 0x27, Nrc.INVALID_KEY))


def test_flaws_are_named_in_the_setting_joined_by_plus() -> None:
    settings = DiagnosticsSettings(flaw="weak-key+no-attempt-limit")
    assert settings.flaws == {"weak-key", "no-attempt-limit"} and settings.problems() == []


def test_the_default_setting_has_no_flaw() -> None:
    assert DiagnosticsSettings().flaws == frozenset()


def test_an_unknown_flaw_is_a_problem_naming_the_flaws() -> None:
    (problem,) = DiagnosticsSettings(flaw="weak-seed").problems()
    assert "weak-seed" in problem and "static-seed" in problem


def test_security_refuses_an_unknown_flaw() -> None:
    with pytest.raises(ValueError, match="unknown flaw"):
        Security(b"n", SecurityStore(None), default_key, 3, 100, frozenset({"nonsense"}))
