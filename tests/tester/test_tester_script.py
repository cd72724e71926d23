"""The diagnostic script's format: one step a line, every rule checked before a run, the first
problem one line naming the file and the line (exit 2 from the command line)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ecu_sim.calibration.files import write_image
from ecu_sim.errors import ConfigError
from ecu_sim.nodes.calibrated import builtin_image
from ecu_sim.tester.script import STEPS, ImageDownload, load_script
from tests.helpers.powertrainrig import settings


def script(folder: Path, *lines: str) -> str:
    path = folder / "session.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def refusal(folder: Path, *lines: str, duration_s: float | None = None) -> str:
    path = script(folder, *lines)
    with pytest.raises(ConfigError) as refused:
        load_script(path, duration_s)
    return str(refused.value)


def test_a_line_is_time_node_step_and_its_arguments(tmp_path: Path) -> None:
    steps = load_script(script(tmp_path, "1.5 0x0B read F190 F186", "2 3 raw 3E 00"))
    assert [(s.line, s.at_s, s.node, s.name, s.arguments) for s in steps] == [
        (1, 1.5, 0x0B, "read", (0xF190, 0xF186)), (2, 2.0, 3, "raw", b"\x3e\x00")]


def test_blank_lines_and_comments_are_no_steps(tmp_path: Path) -> None:
    steps = load_script(script(tmp_path, "# a reflash", "", "1.0 0x00 session extended  # first"))
    assert [(s.line, s.name, s.arguments) for s in steps] == [(3, "session", 0x03)]


def test_a_line_without_its_step_names_the_form(tmp_path: Path) -> None:
    assert refusal(tmp_path, "1.0 0x00") == f"{tmp_path / 'session.txt'}:1: expected TIME NODE STEP " \
        "[ARGUMENTS], e.g. 1.0 0x00 read F190"


def test_an_unknown_step_lists_the_steps(tmp_path: Path) -> None:
    assert refusal(tmp_path, "# x", "1.0 0x00 flash it").endswith(
        ":2: unknown step 'flash'; the steps are raw, session, unlock, erase, download, check, reset, "
        "read, write")


def test_a_time_is_a_number_of_seconds_not_below_zero(tmp_path: Path) -> None:
    assert "session.txt:1: a step starts with its time in seconds" in refusal(tmp_path, "-1 0x00 unlock")
    assert "(got 'soon')" in refusal(tmp_path, "soon 0x00 unlock")


def test_the_node_is_an_address_a_request_can_go_to(tmp_path: Path) -> None:
    assert "session.txt:1: the node is its address, 0..0xFD" in refusal(tmp_path, "1 0xFF unlock")
    assert "(got 'engine')" in refusal(tmp_path, "1 engine unlock")


def test_the_steps_are_written_in_the_order_of_time(tmp_path: Path) -> None:
    assert refusal(tmp_path, "2 0 unlock", "1 0 erase").endswith(
        ":2: the step at 1 s comes before the one above it at 2 s; write the steps in the order of time")


def test_a_step_at_or_after_the_runs_end_is_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path, "10 0 unlock", duration_s=10.0).endswith(
        ":1: the step at 10 s is at or after the run's end (10 s); run longer or move the step")


def test_a_raw_request_is_hex_bytes(tmp_path: Path) -> None:
    assert ":1: raw: a raw request must be hex bytes" in refusal(tmp_path, "1 0 raw 22 F1 9")


def test_a_session_is_named(tmp_path: Path) -> None:
    assert refusal(tmp_path, "1 0 session fast").endswith(
        ":1: session: takes one session: default, programming, extended (got fast)")


def test_a_data_identifier_is_four_hex_digits(tmp_path: Path) -> None:
    assert "read: a data identifier is four hex digits" in refusal(tmp_path, "1 0 read F19")


def test_a_step_without_arguments_takes_none(tmp_path: Path) -> None:
    assert refusal(tmp_path, "1 0 unlock 2").endswith(":1: unlock: takes no arguments (got '2')")


def test_a_download_reads_its_image_beside_the_script(tmp_path: Path) -> None:
    image = builtin_image("engine", settings()).changed({"road_speed_limit_kph": 60.0}, "SLOW-60")
    write_image(image, tmp_path / "slow.s19")
    (step,) = load_script(script(tmp_path, "1 0x00 download slow.s19"))
    assert step.arguments == ImageDownload(str(tmp_path / "slow.s19"), 0x80000, image.data)


def test_a_download_of_a_file_that_is_no_image_names_the_line_and_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.s19").write_text("S1 not a record\n", encoding="ascii")
    said = refusal(tmp_path, "1 0x00 download bad.s19")
    assert said.startswith(f"{tmp_path / 'session.txt'}:1: download: {tmp_path / 'bad.s19'}: "
                           "not a valid S-record")


def test_a_script_without_a_step_is_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path, "# nothing yet").endswith(
        "session.txt: the diagnostic script has no step; a line is TIME NODE STEP [ARGUMENTS], "
        "e.g. 1.0 0x00 read F190")


PAGE = Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md"


def scripted_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text[text.index("## A scripted session"):text.index("## Cost and determinism")]


def test_the_docs_table_names_every_step_of_a_script() -> None:
    rows = re.findall(r"^\| `(\w+)[^`]*` \|", scripted_section(), flags=re.MULTILINE)
    assert rows == list(STEPS)


def test_the_docs_example_script_is_a_script(tmp_path: Path) -> None:
    example = scripted_section().split("```text\n", 1)[1].split("```", 1)[0]
    write_image(builtin_image("engine", settings()), tmp_path / "slow.s19")
    steps = load_script(script(tmp_path, *example.splitlines()))
    assert [step.name for step in steps] == ["read", "session", "session", "unlock", "erase", "download",
                                             "check", "reset"]
