"""A controller under test written in C (examples/cut_ccm.c, a raw AF_CAN socket), built with
Debian's gcc and run by ``ecu-sim campaign --socketcan``: each case on a vcan of its own, made
before the case and deleted after it. It is examples/cut_ccm.py's twin, so the two drive the
truck the same way (``compare --traces`` says *same*). Its armhf build (Debian's
arm-linux-gnueabihf-gcc, static) runs the same suite under qemu-user, through the binfmt_misc
registration scripts/vm-test makes in the guest: the board's binary, the VM's SocketCAN.

Runs in the SocketCAN VM (scripts/vm-test). Each case is a few seconds of real time; nothing here
asserts how long anything took.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from ecu_sim.cli import main
from ecu_sim.link.private import PREFIX

pytestmark = pytest.mark.socketcan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: two short cases of examples/controller.toml's kind, one from below the set speed, one from above
SUITE = """
[campaign]
name = "c"

[program]
command = {command!r}
{extra}

[base]
run.duration_s = 8

[[case]]
run.set_speed_kph = 80
run.initial_speed_kph = 70

[[case]]
run.set_speed_kph = 90
run.initial_speed_kph = 95
"""
C_COMMAND = "./cut_ccm --iface {iface} --set-speed {run.set_speed_kph}"
ARMHF_COMMAND = "./cut_ccm_armhf --iface {iface} --set-speed {run.set_speed_kph}"
#: two runs of each case: real-time runs of one controller differ (a frame falls a tick earlier or
#: later), and the verdict of compare --traces weighs the difference between two controllers
#: against that spread
REPEAT = "repeat = 2"
#: e_machine of a 32-bit ARM ELF file
EM_ARM = 40
PYTHON_COMMAND = (f"{{python}} {EXAMPLES / 'cut_ccm.py'} --interface socketcan --channel {{iface}} "
                  "--set-speed {run.set_speed_kph}")


@dataclass(frozen=True)
class Runs:
    c: Path
    python: Path
    armhf: Path
    private_links_after: list[str]


def compiler(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is missing: scripts/vm-test installs it", pytrace=False)
    return found


def build(gcc: str, out: Path, *flags: str) -> None:
    subprocess.run([gcc, *flags, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out),
                    str(EXAMPLES / "cut_ccm.c"), "-lm"], check=True)


def private_links() -> list[str]:
    return sorted(p.name for p in Path("/sys/class/net").iterdir() if p.name.startswith(PREFIX))


def rows(table: Path) -> list[dict[str, str]]:
    with open(table, newline="") as handle:
        return list(csv.DictReader(handle))


def campaign(folder: Path, command: str, extra: str, *args: str) -> Path:
    folder.mkdir(exist_ok=True)
    suite = folder / "suite.toml"
    suite.write_text(SUITE.format(command=command, extra=extra))
    out = folder / "out"
    assert main(["campaign", str(suite), "--out", str(out), "--workers", "2", "--keep-traces", *args]) == 0
    return out / "results.csv"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """The two cases of the C controller, of its armhf build and of the Python example, each case
    on a vcan of its own (the guest has no network for udp_multicast)."""
    folder = tmp_path_factory.mktemp("c")
    build(compiler("gcc"), folder / "cut_ccm")
    before = private_links()
    c = campaign(folder, C_COMMAND, REPEAT, "--socketcan")
    after = [name for name in private_links() if name not in before]
    arm = tmp_path_factory.mktemp("armhf")
    build(compiler("arm-linux-gnueabihf-gcc"), arm / "cut_ccm_armhf", "-static")
    if not Path("/proc/sys/fs/binfmt_misc/qemu-arm").exists():
        pytest.fail("no binfmt_misc entry qemu-arm: scripts/vm-test registers it when "
                    "/usr/bin/qemu-arm-static exists (qemu-user-static)", pytrace=False)
    armhf = campaign(arm, ARMHF_COMMAND, f"{REPEAT}\nsilent_s = 30", "--socketcan")
    # an interpreter under software emulation takes many seconds to import python-can
    python = campaign(tmp_path_factory.mktemp("python"), PYTHON_COMMAND, f"{REPEAT}\nsilent_s = 60",
                      "--socketcan")
    failed = [row["error"] for row in rows(python) if row["status"] != "ok"]
    if failed:
        pytest.fail(f"the Python example, the yardstick, failed: {failed}", pytrace=False)
    return Runs(c, python, armhf, after)


def test_the_c_controller_runs_every_case_to_its_end_and_stops_on_sigterm(runs: Runs) -> None:
    found = rows(runs.c)
    assert len(found) == 4 and all(row["status"] == "ok" for row in found), found
    assert all(row["controller_stop"] == "SIGTERM" for row in found), found


def test_no_private_vcan_outlives_its_case(runs: Runs) -> None:
    assert runs.private_links_after == []


def test_the_c_controller_drives_as_the_python_example_does(runs: Runs,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["campaign", "compare", str(runs.python), str(runs.c), "--traces"])
    out = capsys.readouterr().out
    assert status == 0, out


def test_a_controller_that_fails_at_start_still_leaves_no_vcan(tmp_path: Path) -> None:
    crashing = tmp_path / "crash"
    crashing.write_text("#!/bin/sh\necho no bus for me >&2\nexit 3\n")
    crashing.chmod(0o755)
    before = private_links()
    table = campaign(tmp_path, "./crash {iface}", "silent_s = 30", "--socketcan")
    found = rows(table)
    assert [row["status"] for row in found] == ["failed", "failed"]
    assert all("no bus for me" in row["error"] for row in found), found
    assert private_links() == before


def test_the_armhf_build_is_an_arm_program(runs: Runs) -> None:
    header = (runs.armhf.parent.parent / "cut_ccm_armhf").read_bytes()[:20]
    assert header[:5] == b"\x7fELF\x01" and int.from_bytes(header[18:20], "little") == EM_ARM


def test_the_armhf_build_under_qemu_user_runs_every_case_to_its_end(runs: Runs) -> None:
    found = rows(runs.armhf)
    assert len(found) == 4 and all(row["status"] == "ok" for row in found), found
    assert all(row["controller_stop"] == "SIGTERM" for row in found), found


def test_the_armhf_build_drives_as_the_python_example_does(runs: Runs,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["campaign", "compare", str(runs.python), str(runs.armhf), "--traces"])
    out = capsys.readouterr().out
    assert status == 0, out
