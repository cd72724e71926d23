"""The INI dialect of --config: comments, lists and true/false words as people write them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import parse_fault
from ecu_sim.settings import load as config
from ecu_sim.settings import values
from ecu_sim.settings.model import Settings


def load_ini(tmp_path: Path, text: str, **cli: object) -> Settings:
    path = tmp_path / "ecu-sim.ini"
    path.write_text(text)
    args = argparse.Namespace(config=str(path))
    for key, value in cli.items():
        setattr(args, "cfg:" + key.replace("__", "."), value)
    return config.load(args, environ={})


@pytest.mark.parametrize("prefix", [";", "#"])
def test_an_inline_comment_after_a_value_is_not_part_of_it(tmp_path: Path, prefix: str) -> None:
    settings = load_ini(tmp_path, f"[profile]\nname = amp {prefix} the testbed's bytes\n"
                                  f"app_source = 0x26\t{prefix} the CCM\n")
    assert (settings.profile.name, settings.profile.app_source) == ("amp", 0x26)


@pytest.mark.parametrize("prefix", [";", "#"])
def test_an_inline_comment_after_a_section_header_is_not_part_of_it(tmp_path: Path, prefix: str) -> None:
    settings = load_ini(tmp_path, f"[truck]   {prefix} the testbed's truck\nmass_kg = 9000\n")
    assert settings.truck.mass_kg == 9000


@pytest.mark.parametrize("prefix", [";", "#"])
def test_a_full_line_comment_is_ignored_even_when_indented(tmp_path: Path, prefix: str) -> None:
    settings = load_ini(tmp_path, f"{prefix} top\n[run]\n{prefix} set_speed_kph = 10\n"
                                  f"  {prefix} indented\nset_speed_kph = 70\n")
    assert settings.run.set_speed_kph == 70


def test_a_comment_character_inside_a_value_without_a_space_before_it_is_kept(tmp_path: Path) -> None:
    settings = load_ini(tmp_path, "[record]\nfile = /var/log/run#2.log\n")
    assert settings.record.file == "/var/log/run#2.log"


def test_an_empty_optional_value_means_not_given(tmp_path: Path) -> None:
    settings = load_ini(tmp_path, "[run]\nperiod_s =    ; from the DBC\nduration_s =\n")
    assert (settings.run.period_s, settings.run.duration_s) == (None, None)


def test_a_faults_inject_list_of_several_lines_with_comments(tmp_path: Path) -> None:
    settings = load_ini(tmp_path, """[faults]
inject = drop=0.05        ; a flaky link
    # a stuck sensor, then a missing one
    freeze@90-100         # stuck
    ; na@110+1  (not this one)
    na@120+2
seed = 7                  ; repeatable
""")
    assert settings.faults.inject == ("drop=0.05", "freeze@90-100", "na@120+2")
    assert settings.faults.seed == 7


def test_a_faults_inject_list_may_start_on_the_next_line(tmp_path: Path) -> None:
    settings = load_ini(tmp_path, "[faults]\ninject =\n    drop=0.05\n    silent@60+5\n")
    assert settings.faults.inject == ("drop=0.05", "silent@60+5")


def test_a_faults_inject_list_may_be_separated_by_commas(tmp_path: Path) -> None:
    settings = load_ini(tmp_path, "[faults]\ninject = drop=0.05, silent@60+5 ,na@120+2  ; three\n")
    assert settings.faults.inject == ("drop=0.05", "silent@60+5", "na@120+2")


def test_a_faults_inject_list_in_the_environment_is_separated_by_commas_or_lines() -> None:
    environ = {"ECU_SIM_FAULTS_INJECT": "drop=0.05,silent@60+5\nna@120+2"}
    assert config.load(argparse.Namespace(), environ=environ).faults.inject == (
        "drop=0.05", "silent@60+5", "na@120+2")


def test_a_repeated_fault_option_may_hold_several_faults_separated_by_commas(tmp_path: Path) -> None:
    settings = load_ini(tmp_path, "", faults__inject=["drop=0.05,silent@60+5", "na@120+2"])
    assert settings.faults.inject == ("drop=0.05", "silent@60+5", "na@120+2")


def test_faults_separated_by_a_semicolon_are_an_error_saying_how_to_separate_them(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[faults\] inject in .*'drop=0.05;silent@60\+5': ';' does not "
                                          r"separate faults; put one fault per line or separate them by ','"):
        load_ini(tmp_path, "[faults]\ninject = drop=0.05;silent@60+5\n")


def test_no_fault_spec_contains_a_comma_so_a_comma_can_separate_them() -> None:
    examples = ["drop", "drop=0.05", "delay=0.3@200-230", "freeze@90-100", "na@120+2", "offset=+3.5@150-170",
                "scale=0.5", "error@1", "silent@60+5"]
    assert all("," not in str(parse_fault(text)) for text in examples)


@pytest.mark.parametrize(("word", "truth"), [("1", True), ("yes", True), ("True", True), (" on ", True),
                                              ("0", False), ("no", False), ("FALSE", False), ("off", False)])
def test_the_true_and_false_words_are_configparsers(word: str, truth: bool) -> None:
    assert values.parse_bool(word, "fd", "[bus] fd in x.ini") is truth
    assert values.convert(word, bool, "fd", "[bus] fd in x.ini") is truth


@pytest.mark.parametrize("word", ["ja", "enabled", "2", "", "y"])
def test_an_unknown_true_false_word_is_an_error_naming_the_key_the_origin_and_the_words(word: str) -> None:
    with pytest.raises(ConfigError) as info:
        values.convert(word, bool, "fd", "[bus] fd in /etc/ecu-sim/ecu-sim.ini")
    assert str(info.value) == (f"fd must be 1/yes/true/on for true or 0/no/false/off for false "
                               f"(got {word!r}, [bus] fd in /etc/ecu-sim/ecu-sim.ini)")


def test_an_optional_true_false_value_left_empty_is_not_given() -> None:
    assert values.convert(" ", bool | None, "fd", "[bus] fd in x.ini") is None


def test_a_default_section_is_an_error_rather_than_copied_into_every_section(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown section \[DEFAULT\] in .*ecu-sim\.ini"):
        load_ini(tmp_path, "[DEFAULT]\nmass_kg = 1\n[truck]\ninertia_factor = 1.1\n")
