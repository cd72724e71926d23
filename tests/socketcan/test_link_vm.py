"""``ecu-sim link`` against a real kernel: vcan creation, idempotence, and emulated CAN controllers.

These run inside the VM (scripts/vm-test).  The bus is checked through raw sockets and sysfs, not
through ecu_sim.  Starting ``python -m ecu_sim`` is slow under software emulation, so only the calls
the command line itself must prove are subprocesses; the rest calls ``main`` in-process.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ecu_sim.bus.state import ControllerState
from ecu_sim.cli import main
from ecu_sim.link import apply
from ecu_sim.link.errors import LinkError, LinkUnsupportedError
from tests.socketcan.conftest import (
    ARPHRD_CAN,
    CAN_ERR_FLAG,
    RawCapture,
    create_vcan,
    delete_link,
    link_exists,
    link_flags,
    link_ifindex,
)

pytestmark = pytest.mark.socketcan

IFF_UP = 0x1
#: one ``python -m ecu_sim`` start imports python-can, cantools and pyroute2: slow under TCG
CLI_TIMEOUT = 300.0
#: set by scripts/vm-test when it attached emulated SJA1000 controllers (qemu kvaser_pci) on one
#: qemu can-bus; never guessed, so these tests cannot reconfigure a real adapter on a developer's board
CONTROLLERS = [name for name in os.environ.get("ECU_SIM_TEST_CONTROLLERS", "").split(",") if name]


def ecu_sim(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAN_", "ECU_SIM_"))}
    return subprocess.run([sys.executable, "-m", "ecu_sim", *args], capture_output=True, text=True,
                          timeout=CLI_TIMEOUT, env=env, check=False)


def show_fields(text: str) -> dict[str, str]:
    """``key: value`` lines of ``--show`` output."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and line.startswith("  "):
            fields[key] = value.strip()
    return fields


def assert_frames_flow(iface: str) -> None:
    with RawCapture(iface) as capture:
        capture.send(0x18FEF100, b"\x01\x02\x03\x04\x05\x06\x07\x08")
        capture.send(0x123, b"\xaa")
        extended, standard = capture.wait_for(lambda f: f.can_id in (0x18FEF100, 0x123), count=2, timeout=5)
    assert (extended.can_id, extended.extended, extended.data) == (0x18FEF100, True, bytes(range(1, 9)))
    assert (extended.pgn, extended.source_address, extended.priority) == (0xFEF1, 0x00, 6)
    assert (standard.can_id, standard.extended, standard.data) == (0x123, False, b"\xaa")


@pytest.fixture
def no_vcan0() -> Iterator[str]:
    delete_link("vcan0")
    yield "vcan0"
    delete_link("vcan0")


def test_a_missing_vcan_is_reported_with_the_command_that_creates_it(
        no_vcan0: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["link", no_vcan0, "--show"]) == 69
    hint = "vcan0 does not exist; create it with `sudo ecu-sim link vcan0 --create`"
    assert hint in capsys.readouterr().err


def test_create_brings_vcan0_up_once_and_frames_flow(no_vcan0: str) -> None:
    first = ecu_sim("link", no_vcan0, "--create", "--show")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0] == "vcan0: created, brought up"
    fields = show_fields(first.stdout)
    assert (fields["kind"], fields["admin"], fields["mtu"]) == ("vcan", "up", "72")
    assert Path("/sys/class/net/vcan0/type").read_text().strip() == str(ARPHRD_CAN)
    assert link_flags(no_vcan0) & IFF_UP
    index = link_ifindex(no_vcan0)
    assert_frames_flow(no_vcan0)

    second = ecu_sim("link", no_vcan0, "--create", "--show")
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[0] == "vcan0: unchanged"
    assert show_fields(second.stdout) == fields
    assert link_ifindex(no_vcan0) == index, "the second --create must not have replaced the interface"


def test_a_deleted_vcan_is_created_again(no_vcan0: str) -> None:
    create_vcan(no_vcan0)
    delete_link(no_vcan0)
    assert not link_exists(no_vcan0)
    again = ecu_sim("link", no_vcan0, "--create")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "vcan0: created, brought up"
    assert link_flags(no_vcan0) & IFF_UP
    assert_frames_flow(no_vcan0)


def test_a_down_vcan_is_only_brought_up(vcan: str) -> None:
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        ipr.link("set", index=link_ifindex(vcan), state="down")
    assert apply.ensure_vcan(vcan) == ["brought up"]
    assert apply.ensure_vcan(vcan) == []
    assert link_flags(vcan) & IFF_UP


def test_link_state_of_a_live_vcan(vcan: str) -> None:
    state = apply.link_state(vcan)
    assert (state.name, state.kind, state.up, state.mtu) == ("vcan0", "vcan", True, 72)
    assert state.index == link_ifindex(vcan)
    assert state.controller_state is None and state.bitrate is None


def test_controller_settings_on_a_vcan_are_refused(vcan: str) -> None:
    with pytest.raises(LinkUnsupportedError, match="not a CAN controller"):
        apply.configure(vcan, bitrate=250000)


def test_create_refuses_to_take_over_another_kind_of_interface() -> None:
    with pytest.raises(LinkError, match="lo already exists and is a"):
        apply.ensure_vcan("lo")
    assert link_flags("lo") & IFF_UP


def test_error_frames_can_be_injected_on_vcan(vcan: str, capture: RawCapture) -> None:
    """Bus-fault tests depend on this: vcan passes CAN_ERR_FLAG frames to sockets that ask for them."""
    # CAN_ERR_CRTL | CAN_ERR_BUSOFF, data[1] = CAN_ERR_CRTL_TX_PASSIVE, data[6..7] = tx/rx error counters
    capture.send(0x044, bytes([0, 0x20, 0, 0, 0, 0, 0x80, 0x10]), error=True)
    (frame,) = capture.wait_for(lambda f: f.error, timeout=5)
    assert (frame.can_id, frame.data[1], frame.data[6]) == (0x044, 0x20, 0x80)
    with RawCapture(vcan, receive_errors=False) as deaf:
        capture.send(0x044, bytes(8), error=True)
        capture.send(0x100, b"\x01")
        capture.wait_for(lambda f: f.can_id == 0x100, timeout=5)
        deaf.wait_for(lambda f: f.can_id == 0x100, timeout=5)
        assert not deaf.frames(lambda f: f.error), "error frames reach only sockets with CAN_RAW_ERR_FILTER"
    assert CAN_ERR_FLAG == 0x20000000


# --------------------------------------------------------------------------------------------------
# Emulated controllers (qemu kvaser_pci, an SJA1000): a kind "can" link with real bit timing


needs_controllers = pytest.mark.skipif(
    len(CONTROLLERS) < 2,
    reason="no emulated CAN controllers (scripts/vm-test sets ECU_SIM_TEST_CONTROLLERS)")


@needs_controllers
def test_a_controller_without_bit_timing_cannot_come_up() -> None:
    """A fresh SJA1000 has no bit rate; bringing it up is refused with the command that fixes it."""
    can1 = CONTROLLERS[1]
    state = apply.link_state(can1)
    if state.bitrate is not None:
        pytest.skip("the controller was configured by an earlier test; the kernel cannot unset a bit rate")
    with pytest.raises(LinkError, match="--bitrate 250000"):
        apply.configure(can1)


@needs_controllers
def test_configure_a_controller_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """In-process ``main``: the subprocess path is already proven on vcan0 and is slow under emulation."""
    can0 = CONTROLLERS[0]
    assert main(["link", can0, "--bitrate", "250000", "--restart-ms", "100", "--berr-reporting", "on",
                 "--show"]) == 0
    out = capsys.readouterr().out
    changes = "bitrate unset -> 250000, restart-ms 0 -> 100, berr-reporting on, brought up"
    assert out.splitlines()[0] == f"{can0}: {changes}"
    fields = show_fields(out)
    assert fields["kind"] == "can" and fields["admin"] == "up"
    assert fields["controller state"] == "ERROR_ACTIVE"
    assert fields["bitrate"].startswith("250000 (sample point ")
    assert (fields["restart-ms"], fields["berr-reporting"], fields["listen-only"]) == ("100", "on", "off")
    assert fields["error counters"] == "tx 0 rx 0"
    assert fields["device stats"].startswith("bus-error 0 ")

    state = apply.link_state(can0)
    assert apply.configure(can0, bitrate=250000, restart_ms=100, berr_reporting=True) == []
    assert apply.link_state(can0) == state, "an unchanged configure must not bounce the link"


@needs_controllers
def test_controllers_on_one_bus_exchange_frames_and_listen_only_is_applied() -> None:
    can0, can1 = CONTROLLERS[:2]
    for name in (can0, can1):
        apply.configure(name, bitrate=500000, listen_only=False)
    assert apply.link_state(can1).bitrate == 500000
    with RawCapture(can1) as capture, RawCapture(can0) as sender:
        sender.send(0x18FEF117, b"\x11\x22")
        (frame,) = capture.wait_for(lambda f: f.can_id == 0x18FEF117, timeout=5)
    assert frame.data == b"\x11\x22"

    assert apply.configure(can1, listen_only=True) == ["listen-only on"]
    state = apply.link_state(can1)
    assert (state.listen_only, state.up, state.bitrate) == (True, True, 500000)
    assert apply.configure(can1, listen_only=False) == ["listen-only off"]


@needs_controllers
def test_the_kernel_takes_the_restart_request_and_answers_for_the_controller_state() -> None:
    """qemu's SJA1000 cannot be driven bus-off, but the kernel's answer still proves the request.

    A malformed IFLA_CAN_RESTART (pyroute2's zero-length flag) is refused by the netlink policy
    with ERANGE before anything is looked at; a well-formed one reaches can_restart_now(), which
    answers EBUSY for an up controller with restart-ms 0 that is not bus-off.  Last in the file:
    it sets restart-ms 0 on a controller the tests above configured.
    """
    can0 = CONTROLLERS[0]
    apply.configure(can0, bitrate=250000, restart_ms=0)
    state = apply.link_state(can0)
    assert (state.up, state.restart_ms) == (True, 0)
    assert state.controller_state is ControllerState.ERROR_ACTIVE
    with pytest.raises(OSError) as refused:
        apply._restart_request(state.index)
    assert refused.value.errno == errno.EBUSY, refused.value
    assert apply.restart(can0) == [], "not bus-off: nothing to restart"
    assert main(["link", can0, "--restart"]) == 0
