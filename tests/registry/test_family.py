"""A family of kinds: each kind registered once, its parameters read and checked from text."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ecu_sim.registry.family import Family, ParamError, Reader, UnknownKind, choice, param

NUMBER = Reader(float, "a number")


@dataclass(frozen=True)
class Beep:
    pitch: float = param(NUMBER, "440")
    tone: str = param(choice("sine", "square"), "sine")
    start: float = param(NUMBER, "0", key="from")


def family() -> Family[int, str]:
    beeps: Family[int, str] = Family("beep")

    @beeps.register("beep", Beep, "a beep")
    def _beep(params: Beep, times: int) -> str:
        return f"{params.tone} {params.pitch:g} x{times}"
    return beeps


def test_a_kind_is_built_by_the_builder_registered_with_it() -> None:
    kind = family()["beep"]
    assert kind.build(kind.read({"pitch": "880"}), 2) == "sine 880 x2"


def test_a_parameter_not_given_takes_the_default_its_field_writes() -> None:
    assert family()["beep"].read({}) == Beep(440.0, "sine", 0.0)


def test_a_choice_not_offered_is_refused_when_the_parameters_are_read() -> None:
    with pytest.raises(ParamError, match="tone=saw is not one of sine, square"):
        family()["beep"].read({"tone": "saw"})


def test_a_key_the_kind_does_not_take_names_the_ones_it_does() -> None:
    with pytest.raises(ParamError, match="beep takes no 'pich'; it takes pitch, tone, from"):
        family()["beep"].read({"pich": "1"})


def test_a_key_that_is_no_python_name_fills_its_field() -> None:
    kind = family()["beep"]
    assert kind.read({"from": "3"}).start == 3.0
    assert kind.values(kind.read({})) == (("pitch", 440.0), ("tone", "sine"), ("from", 0.0))


def test_an_unknown_kind_names_the_kinds_there_are() -> None:
    with pytest.raises(UnknownKind, match="unknown beep 'boop'; known: beep"):
        family()["boop"]


def test_a_name_registered_twice_is_refused() -> None:
    beeps = family()
    with pytest.raises(ValueError, match="two beep kinds are called 'beep'"):
        beeps.register("beep", Beep, "again")(lambda params, times: "")


@dataclass(frozen=True)
class Tone:
    pitch: float | None = param(NUMBER, missing="{kind} needs a pitch, {meaning}")


def test_a_required_parameter_left_out_is_refused_with_its_own_message() -> None:
    tones: Family[None, float] = Family("tone")
    tones.register("tone", Tone, "a tone")(lambda params, _: params.pitch or 0.0)
    with pytest.raises(ParamError, match="tone needs a pitch, a number"):
        tones["tone"].read({})
