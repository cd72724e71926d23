"""A controller under test (``[program] command``): each case's ECU runs in real time on a bus of
its own, the program is started with that bus and the case's settings, and stopped by SIGTERM
(SIGKILL after the grace period), the row saying which; a program that exits early, never sends or
floods the bus fails its row, and the campaign goes on; a command that cannot run is refused up
front in one line (exit 2); Ctrl-C leaves no controller running.

Each case is a few seconds of real time: nothing here asserts how long anything took.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ecu_sim.campaign import matrix, spec
from ecu_sim.campaign.case import run_case
from tests.conftest import HANG_S, Cli, clean_env, ecu_sim_command

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: the example controller, run by this interpreter (it has python-can)
EXAMPLE = (f"{{python}} {EXAMPLES / 'cut_ccm.py'} --channel {{channel}} --port {{port}} "
           "--set-speed {run.set_speed_kph}")

#: a python-can program that sends the pedal frame every 100 ms and does ``BEHAVIOUR`` first
SCRIPT = """
import signal, sys, time
import can
{behaviour}
with can.Bus(interface="udp_multicast", channel=sys.argv[1], port=int(sys.argv[2]), hop_limit=0) as bus:
    pedal = can.Message(arbitration_id=0x18F00326, data=bytes.fromhex("FFFFFFFFFFFFA5FF"))
    while True:
        bus.send(pedal)
        time.sleep({pause})
"""


def script(tmp_path: Path, behaviour: str = "", pause: float = 0.1) -> str:
    path = tmp_path / f"controller_{uuid.uuid4().hex[:8]}.py"
    path.write_text(SCRIPT.format(behaviour=behaviour, pause=pause))
    return f"{{python}} {path.name} {{channel}} {{port}}"


def campaign(tmp_path: Path, command: str, body: str = "", program: str = "", duration: float = 3) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(f"""
[program]
command = {command!r}
{program}

[base]
run.duration_s = {duration}
run.set_speed_kph = 90
run.initial_speed_kph = 80
{body}
""")
    return path


def only_row(path: Path) -> dict[str, str]:
    cases = matrix.expand(spec.load(path))
    assert len(cases) == 1
    return run_case(cases[0]).cells()


def table(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


# -- a case run against the program --------------------------------------------------------------------


def test_the_program_works_the_pedal_and_the_row_has_the_figures_of_the_run(tmp_path: Path) -> None:
    row = only_row(campaign(tmp_path, EXAMPLE))
    assert (row["status"], row["error"]) == ("ok", "")
    assert row["ticks"] == "30"  # the case's 3 s at the ECU's 100 ms
    assert float(row["app_at_100_s"]) > 0.0  # the PI controller, 10 km/h below its set speed
    assert float(row["final_speed_kph"]) > 80.0


def test_a_program_that_stops_on_sigterm_is_stopped_by_it_and_the_row_says_so(tmp_path: Path) -> None:
    row = only_row(campaign(tmp_path, EXAMPLE))
    assert row["controller_stop"] == "SIGTERM"


def test_a_program_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    command = script(tmp_path, "signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    row = only_row(campaign(tmp_path, command, program="grace_s = 0.5"))
    assert (row["status"], row["controller_stop"]) == ("ok", "SIGKILL")


def test_a_program_that_exits_early_fails_its_row_with_its_status_and_last_words(tmp_path: Path) -> None:
    command = script(tmp_path, "print('no licence for this bus', flush=True); sys.exit(3)")
    row = only_row(campaign(tmp_path, command, duration=60))
    assert row["status"] == "failed"
    assert "exited with status 3" in row["error"] and "no licence for this bus" in row["error"]
    assert row["controller_stop"] == "exited 3"


def test_a_program_that_never_sends_fails_its_row(tmp_path: Path) -> None:
    command = script(tmp_path, "time.sleep(3600)")
    row = only_row(campaign(tmp_path, command, duration=60, program="silent_s = 1"))
    assert row["status"] == "failed"
    assert "sent no frame in 1 s" in row["error"]
    assert row["controller_stop"] == "SIGTERM"


def test_a_program_that_floods_the_bus_fails_its_row(tmp_path: Path) -> None:
    command = script(tmp_path, pause=0.0)
    row = only_row(campaign(tmp_path, command, duration=60, program="flood_fps = 200"))
    assert row["status"] == "failed"
    assert "floods the bus" in row["error"]


def test_a_repeated_case_runs_once_per_repetition_under_numbered_ids(tmp_path: Path) -> None:
    cases = matrix.expand(spec.load(campaign(tmp_path, EXAMPLE, program="repeat = 3")))
    assert [case.id.rsplit("-", 1)[1] for case in cases] == ["1", "2", "3"]
    assert len({case.base_id for case in cases}) == 1


def test_the_command_is_not_part_of_a_cases_id(tmp_path: Path) -> None:
    first = matrix.expand(spec.load(campaign(tmp_path, EXAMPLE)))
    other = matrix.expand(spec.load(campaign(tmp_path, EXAMPLE.replace("cut_ccm", "cut_ccm_patched"))))
    assert [c.id for c in first] == [c.id for c in other]


def test_the_progress_of_cases_in_real_time_shows_how_many_run_and_how_many_are_done() -> None:
    from io import StringIO

    from ecu_sim.campaign.progress import CampaignProgress

    out = StringIO()
    progress = CampaignProgress(total=5, already=0, out=out, clock=lambda: 0.0, workers=3)
    assert "0/5 cases, 3 running" in out.getvalue()
    for _ in range(3):
        progress.case_done(failed=False)
    assert "3/5 cases, 2 running" in progress.text(1.0)


def test_a_case_with_a_controller_under_test_runs_on_a_dask_worker(cli_main: Cli, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    result = cli_main("campaign", str(campaign(tmp_path, EXAMPLE)), "--out", str(tmp_path / "out"),
                      "--executor", "dask", "--workers", "1")
    assert result.status == 0, result.err
    (row,) = table(tmp_path / "out" / "results.csv")
    assert (row["status"], row["error"], row["controller_stop"]) == ("ok", "", "SIGTERM")


# -- bad input -----------------------------------------------------------------------------------------


def test_a_command_that_is_not_found_is_refused_in_one_line(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("campaign", str(campaign(tmp_path, "no-such-controller-x {channel}")),
                      "--out", str(tmp_path / "out"))
    assert result.status == 2
    assert "command not found: no-such-controller-x" in result.err
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1


def test_a_placeholder_that_names_no_setting_is_refused_in_one_line(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("campaign", str(campaign(tmp_path, "{python} x.py --speed {run.top_speed}")),
                      "--out", str(tmp_path / "out"))
    assert result.status == 2
    assert "placeholder names no setting" in result.err and "top_speed" in result.err
    assert "line 3" in result.err


def test_a_socketcan_interface_placeholder_is_refused_on_a_udp_bus(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("campaign", str(campaign(tmp_path, "{python} x.py --iface {iface}")),
                      "--out", str(tmp_path / "out"))
    assert result.status == 2 and "{iface} is a SocketCAN interface" in result.err


def test_command_replaces_only_a_program_the_file_has(cli_main: Cli, tmp_path: Path) -> None:
    path = tmp_path / "plain.toml"
    path.write_text("[base]\nrun.duration_s = 1\n")
    result = cli_main("campaign", str(path), "--out", str(tmp_path / "out"), "--command", "x {channel}")
    assert result.status == 2 and "has none" in result.err


def test_another_driver_beside_a_program_is_refused_with_its_line(cli_main: Cli, tmp_path: Path) -> None:
    path = campaign(tmp_path, EXAMPLE, "driver.mode = \"ccm\"")
    result = cli_main("campaign", str(path), "--out", str(tmp_path / "out"))
    assert result.status == 2
    assert "[program] works the pedal of every case" in result.err and "line 10" in result.err


def test_a_program_that_crashes_at_start_fails_its_row_and_the_campaign_goes_on(
        cli_main: Cli, tmp_path: Path) -> None:
    crashing = tmp_path / "picky.py"
    crashing.write_text(f"import sys, runpy\nif float(sys.argv[-1]) > 100: sys.exit('too fast for me')\n"
                        f"sys.argv = sys.argv[:-1] + ['--set-speed', sys.argv[-1]]\n"
                        f"runpy.run_path({str(EXAMPLES / 'cut_ccm.py')!r}, run_name='__main__')\n")
    command = "{python} picky.py --channel {channel} --port {port} {run.set_speed_kph}"
    path = campaign(tmp_path, command, "[[case]]\nrun.set_speed_kph = 120\n"
                                       "[[case]]\nrun.set_speed_kph = 90\n")
    result = cli_main("campaign", str(path), "--out", str(tmp_path / "out"), "--workers", "2")
    assert result.status == 0
    rows = {row["run.set_speed_kph"]: row for row in table(tmp_path / "out" / "results.csv")}
    assert rows["120"]["status"] == "failed" and "too fast for me" in rows["120"]["error"]
    assert rows["90"]["status"] == "ok"


def test_resume_runs_no_case_twice(cli_main: Cli, tmp_path: Path) -> None:
    path = campaign(tmp_path, EXAMPLE)
    assert cli_main("campaign", str(path), "--out", str(tmp_path / "out"), "--workers", "1").status == 0
    again = cli_main("campaign", str(path), "--out", str(tmp_path / "out"), "--resume")
    assert again.status == 0 and "(0 run now)" in again.out


# -- Ctrl-C ----------------------------------------------------------------------------------------------


def controllers_with(tag: str) -> list[int]:
    """The processes whose command line holds ``tag``: the test's controllers, nothing else."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if tag.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _ctrl_c_as_in_a_terminal() -> None:
    """In the child before exec: SIGINT at its default, as a terminal's foreground job has it. A
    job started in the background by a script (``cmd &``) inherits SIGINT ignored, and Python then
    never turns Ctrl-C into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_in_the_middle_of_a_suite_leaves_no_controller_running(tmp_path: Path) -> None:
    tag = f"cut-tag-{uuid.uuid4().hex}"
    controller = tmp_path / "tagged.py"
    controller.write_text(f"import sys, runpy\nsys.argv = sys.argv[:-1]\n"
                          f"runpy.run_path({str(EXAMPLES / 'cut_ccm.py')!r}, run_name='__main__')\n")
    path = campaign(tmp_path, "{python} tagged.py --channel {channel} --port {port} "
                              f"--set-speed {{run.set_speed_kph}} {tag}",
                    "[matrix]\nrun.set_speed_kph = [70, 80, 90, 100]\n", duration=600)
    suite = subprocess.Popen(ecu_sim_command("campaign", str(path), "--out", str(tmp_path / "out"),
                                             "--workers", "2"),
                             env=clean_env(), start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_as_in_a_terminal)
    try:
        waited = time.monotonic() + HANG_S
        while len(controllers_with(tag)) < 2 and time.monotonic() < waited and suite.poll() is None:
            time.sleep(0.2)
        assert len(controllers_with(tag)) == 2, "the suite never had its two controllers running"
        os.killpg(suite.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        _, err = suite.communicate(timeout=HANG_S)
    finally:
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGKILL)
    assert suite.returncode == 130, err
    waited = time.monotonic() + HANG_S  # a killed controller leaves the process table a moment later
    while controllers_with(tag) and time.monotonic() < waited:
        time.sleep(0.2)
    assert controllers_with(tag) == []


@pytest.mark.skipif(sys.platform != "linux", reason="reads the process table from /proc")
def test_the_process_table_reader_finds_a_tagged_process() -> None:
    tag = f"cut-tag-{uuid.uuid4().hex}"
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", tag]) as sleeper:
        try:
            waited = time.monotonic() + HANG_S  # until the child has exec'd: its command line is then its own
            while not controllers_with(tag) and time.monotonic() < waited:
                time.sleep(0.05)
            assert controllers_with(tag) == [sleeper.pid]
        finally:
            sleeper.kill()


# -- the example pair --------------------------------------------------------------------------------------


def test_the_patched_example_differs_exactly_in_the_case_that_drives_above_100_kph(
        cli_main: Cli, tmp_path: Path) -> None:
    patched = EXAMPLE.replace("cut_ccm.py", "cut_ccm_patched.py")
    body = ("[[case]]\nrun.set_speed_kph = 90\nrun.initial_speed_kph = 95\n"
            "[[case]]\nrun.set_speed_kph = 110\nrun.initial_speed_kph = 104\n")
    # twice each, so the verdict weighs the versions' difference against real time's spread
    path = campaign(tmp_path, EXAMPLE, body, program="repeat = 2", duration=4)
    for name, command in (("a", EXAMPLE), ("b", patched)):
        ran = cli_main("campaign", str(path), "--out", str(tmp_path / name), "--workers", "2",
                       "--keep-traces", "--command", command)
        assert ran.status == 0, ran.err
    result = cli_main("campaign", "compare", str(tmp_path / "a" / "results.csv"),
                      str(tmp_path / "b" / "results.csv"), "--traces")
    verdicts = {line.split(": ")[0]: line for line in result.out.splitlines()
                if line.startswith(("same", "differs", "inconclusive"))}
    assert "run.set_speed_kph=90" in verdicts["same"]
    assert "run.set_speed_kph=110" in verdicts["differs"]
    assert result.status == 1


# -- a controller that speaks the co-simulation protocol: virtual time --------------------------------------

COSIM_PEER = (f"{{python}} {EXAMPLES / 'cosim_pi_peer.py'} --connect {{channel}}:{{port}} "
              "--set-speed {run.set_speed_kph} --duration {run.duration_s}")


def test_a_cosim_controller_runs_its_case_in_virtual_time_bit_identical_between_runs(tmp_path: Path) -> None:
    path = campaign(tmp_path, COSIM_PEER, program="cosim = true", duration=120)
    first, second = only_row(path), only_row(path)
    assert (first["status"], first["error"], first["ticks"]) == ("ok", "", "1200")
    # every figure and the hash of every frame on the bus; how the program ended is real time's:
    # it may leave by itself when the run ends, or be stopped a moment before it would have
    how_it_ended = "controller_stop"
    assert {k: v for k, v in first.items() if k != how_it_ended} == {
        k: v for k, v in second.items() if k != how_it_ended}


def test_a_cosim_controller_that_never_steps_fails_its_row(tmp_path: Path) -> None:
    command = script(tmp_path, "time.sleep(3600)")
    row = only_row(campaign(tmp_path, command, program="cosim = true\nsilent_s = 1", duration=60))
    assert row["status"] == "failed"
    assert "ended after 0 of 600 ticks" in row["error"]


# -- the case's levers ----------------------------------------------------------------------------------

#: a controller that sends the pedal frame and, once it hears the ECU (whose loop runs under the
#: case's levers), notes its parent's scheduling policy (the worker running the ECU) and its own
POLICY_NOTE = """
import os, sys, time
import can
with can.Bus(interface="udp_multicast", channel=sys.argv[1], port=int(sys.argv[2]), hop_limit=0) as bus:
    pedal = can.Message(arbitration_id=0x18F00326, data=bytes.fromhex("FFFFFFFFFFFFA5FF"))
    noted, due = False, time.monotonic()
    while True:
        if time.monotonic() >= due:
            bus.send(pedal)
            due += 0.1
        heard = bus.recv(max(0.0, due - time.monotonic()))
        if heard is not None and heard.arbitration_id != pedal.arbitration_id and not noted:
            with open("policy.txt", "w") as out:
                out.write(f"{os.sched_getscheduler(os.getppid())} {os.sched_getscheduler(0)}")
            noted = True
"""


@pytest.fixture(scope="module")
def realtime_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], list[int], int]:
    """A case with ``run.realtime_priority = 10``: its row, the policies its controller noted
    (the worker's during the run, its own) and the worker's policy after the case."""
    if os.geteuid() != 0:
        pytest.skip("SCHED_FIFO needs root (CAP_SYS_NICE)")
    tmp_path = tmp_path_factory.mktemp("realtime")
    program = tmp_path / "policy_note.py"
    program.write_text(POLICY_NOTE)
    path = campaign(tmp_path, f"{{python}} {program.name} {{channel}} {{port}}", "run.realtime_priority = 10")
    cases = matrix.expand(spec.load(path))
    row = run_case(cases[0]).cells()
    noted = [int(p) for p in (Path(cases[0].folder) / "policy.txt").read_text().split()]
    return row, noted, os.sched_getscheduler(0)


def test_a_case_with_a_realtime_priority_runs_its_ecu_under_sched_fifo(
        realtime_case: tuple[dict[str, str], list[int], int]) -> None:
    row, noted, _ = realtime_case
    assert row["status"] == "ok"
    assert noted[0] == os.SCHED_FIFO


def test_the_controller_under_test_keeps_normal_scheduling_beside_a_realtime_ecu(
        realtime_case: tuple[dict[str, str], list[int], int]) -> None:
    assert realtime_case[1][1] == os.SCHED_OTHER


def test_the_worker_returns_to_normal_scheduling_after_a_realtime_case(
        realtime_case: tuple[dict[str, str], list[int], int]) -> None:
    assert realtime_case[2] == os.SCHED_OTHER
