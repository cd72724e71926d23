"""A scripted diagnostic session in `simulate` (``--diag-script``): the same bytes twice, the requests
as inputs in the recording, which replays bit for bit; the answers in the CSV file."""

from __future__ import annotations

import csv
from pathlib import Path

import can
import pytest

from ecu_sim.settings.diagnostics import DiagnosticsSettings
from tests.conftest import Cli

SINGLE = ("--profile", "j1939", "--no-progress")
POWERTRAIN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--no-progress")
VIN = "1ECUSXM0000000042"
#: reads, a session change, security access, a request nobody answers, and one refused
SESSION = ("0.5 0x00 read F190 F186", "1.0 0x00 session extended", "1.0 0x00 read F186", "1.5 0x00 unlock",
           "2.0 0x42 raw 3E 00", "2.0 0x00 raw 19 02 FF", "2.5 0x00 reset")


def write(folder: Path, name: str, *lines: str) -> str:
    path = folder / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def simulate(cli_main: Cli, folder: Path, *args: str, lines: tuple[str, ...] = SESSION,
             network: tuple[str, ...] = SINGLE) -> list[dict[str, str]]:
    """``simulate`` for 4 s with the script of ``lines``; the rows of its answers' file."""
    folder.mkdir(exist_ok=True)
    config = write(folder, "vin.ini", "[fms]", f"vin = {VIN}")
    result = cli_main("simulate", *network, "--config", config, "--duration", "4",
                      "--diag-script", write(folder, "session.txt", *lines),
                      "--diag-answers", str(folder / "answers.csv"), *args)
    assert result.status == 0, result.err
    with (folder / "answers.csv").open(encoding="utf-8") as file:
        return list(csv.DictReader(file))


def answers(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(row["request"], row["answer"]) for row in rows]


def test_the_vin_and_the_active_session_are_read_through_the_script_from_the_single_ecu(
        cli_main: Cli, tmp_path: Path) -> None:
    got = answers(simulate(cli_main, tmp_path))
    assert got[0] == ("22F190F186", "62F190" + VIN.encode("ascii").hex().upper() + "F18601")
    assert got[1][1].startswith("5003") and got[2] == ("22F186", "62F18603")


def test_the_vin_and_the_active_session_are_read_through_the_script_from_the_powertrains_engine(
        cli_main: Cli, tmp_path: Path) -> None:
    got = answers(simulate(cli_main, tmp_path, network=POWERTRAIN))
    assert got[0] == ("22F190F186", "62F190" + VIN.encode("ascii").hex().upper() + "F18601")
    assert got[2] == ("22F186", "62F18603")


def test_unlock_sends_the_key_of_the_seed_and_is_granted(cli_main: Cli, tmp_path: Path) -> None:
    rows = simulate(cli_main, tmp_path)
    unlock = [row for row in rows if row["line"] == "4"]
    assert [row["request"][:4] for row in unlock] == ["2701", "2702"] and unlock[1]["answer"] == "6702"


def test_a_step_goes_when_the_answer_before_it_came(cli_main: Cli, tmp_path: Path) -> None:
    rows = simulate(cli_main, tmp_path)
    session, read = rows[1], rows[2]  # both written for 1.0 s
    assert float(session["sent_s"]) == 1.0 and float(read["sent_s"]) == float(session["answer_s"]) > 1.0


def test_a_request_nobody_answers_has_no_answer_and_the_script_goes_on(cli_main: Cli, tmp_path: Path) -> None:
    rows = simulate(cli_main, tmp_path)
    silent = next(row for row in rows if row["request"] == "3E00")
    after = rows[rows.index(silent) + 1]
    assert silent["answer"] == "" and after["request"] == "1902FF" and after["answer"].startswith("5902")


def test_a_refused_step_ends_at_its_refusal(cli_main: Cli, tmp_path: Path) -> None:
    rows = simulate(cli_main, tmp_path, lines=("0.5 0x00 unlock", "1.0 0x00 read F186"))
    assert answers(rows) == [("2701", "7F277F"), ("22F186", "62F18601")]


def test_the_same_session_twice_records_the_same_bytes(cli_main: Cli, tmp_path: Path) -> None:
    for run in ("a", "b"):
        simulate(cli_main, tmp_path / run, "--record", str(tmp_path / run / "run.log"))
    logs = [(tmp_path / run / "run.log").read_bytes() for run in ("a", "b")]
    ticks = [(tmp_path / run / "run.log.ticks").read_text().splitlines()[1:] for run in ("a", "b")]
    assert logs[0] == logs[1] and ticks[0] == ticks[1]


def test_the_testers_requests_are_received_frames_in_the_recording(cli_main: Cli, tmp_path: Path) -> None:
    simulate(cli_main, tmp_path, "--record", str(tmp_path / "run.log"))
    frames = can.CanutilsLogReader(str(tmp_path / "run.log"))
    requests = [msg for msg in frames if msg.arbitration_id == 0x18DA00F9]
    assert requests and all(msg.is_rx for msg in requests)


def test_a_recording_with_a_scripted_session_replays_bit_for_bit(cli_main: Cli, tmp_path: Path) -> None:
    for network in (SINGLE, POWERTRAIN):
        folder = tmp_path / network[1]
        simulate(cli_main, folder, "--record", str(folder / "run.log"), network=network)
        replayed = cli_main("replay", str(folder / "run.log"))
        assert replayed.status == 0 and "bit for bit as recorded" in replayed.out + replayed.err


def test_simulate_refuses_a_bad_script_in_one_line_with_exit_2_and_writes_nothing(cli_main: Cli,
                                                                                 tmp_path: Path) -> None:
    path = write(tmp_path, "session.txt", "1 0x00 read F190", "2 0x00 reed F186")
    answers_file = tmp_path / "answers.csv"
    result = cli_main("simulate", "--duration", "5", "--no-progress", "--diag-script", path,
                      "--diag-answers", str(answers_file))
    assert result.status == 2 and f"{path}:2: unknown step 'reed'" in result.err
    assert len(result.err.strip().splitlines()) == 1 and not answers_file.exists()


def test_answers_need_a_script() -> None:
    assert DiagnosticsSettings(answers="a.csv").problems() == [
        "answers is where a diagnostic script's answers go: give script too"]


def test_unlock_computes_the_key_with_the_key_algorithm_the_settings_name(
        cli_main: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "testerkeys.py").write_text(
        "def key(seed: bytes, level: int) -> bytes:\n    return bytes(b ^ 0x5A for b in seed)\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = write(tmp_path, "keys.ini", "[diagnostics]", "key_algorithm = testerkeys:key")
    rows = simulate(cli_main, tmp_path / "run", "--config", config,
                    lines=("0.5 0x00 session extended", "1.0 0x00 unlock"))
    seed, key = bytes.fromhex(rows[1]["answer"])[2:], bytes.fromhex(rows[2]["request"])[2:]
    assert key == bytes(b ^ 0x5A for b in seed) and rows[2]["answer"] == "6702"


def test_a_campaign_case_holds_the_script_its_settings_name(tmp_path: Path) -> None:
    from ecu_sim.campaign import matrix, spec
    from ecu_sim.campaign.case import run_case

    write(tmp_path, "session.txt", "0.5 0x00 read F186", "1.0 0x00 session extended")
    path = tmp_path / "c.toml"  # the script beside it, named as a relative path
    path.write_text(f'[base]\nrun.duration_s = 3\nprofile.name = "j1939"\n[[case]]\n'
                    f'diagnostics.script = "session.txt"\ndiagnostics.answers = "{tmp_path / "a.csv"}"\n',
                    encoding="utf-8")
    (case,) = matrix.expand(spec.load(path))
    assert run_case(case)["status"] == "ok"
    with (tmp_path / "a.csv").open(encoding="utf-8") as file:
        assert answers(list(csv.DictReader(file))) == [("22F186", "62F18601"), ("1003", "500300C801F4")]
