"""``ecu-sim driver`` on a real vcan0, its pedal a virtual input device made with uinput.

Runs inside the VM (scripts/vm-test loads the uinput module). python-evdev's UInput creates a
device with an accelerator axis the kernel publishes as /dev/input/eventN; the test moves that
axis and watches, with a raw PF_CAN socket and a hand decoder of the amp profile's bytes, the APP
frames the driver process sends under its own source address follow it.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli
from tests.socketcan.conftest import Frame, RawCapture, run_cli

pytestmark = pytest.mark.socketcan

#: the amp profile's APP frame (PGN 61443) from the driver's default source address 0x31
DRIVER_APP_ID = 0x18F00331
#: the j1939 profile's CCVS2 (PGN 2560, to the CCM at 0x11) from 0x31: the cruise commands
J1939_COMMANDS_ID = 0x0C0A1131
AXIS_MAX = 1000


def app_pct(frame: Frame) -> int:
    """Byte 6, 1 %/bit, offset -125 %: decoded by hand, not by the project's codec."""
    return frame.data[6] - 125


@pytest.fixture
def pedal() -> Iterator[Any]:
    evdev = pytest.importorskip("evdev")
    if not Path("/dev/uinput").exists():
        pytest.fail("/dev/uinput is missing: the guest must load the uinput module (scripts/vm-test)")
    ecodes = evdev.ecodes
    axis = evdev.AbsInfo(value=0, min=0, max=AXIS_MAX, fuzz=0, flat=0, resolution=0)
    device = evdev.UInput({ecodes.EV_ABS: [(ecodes.ABS_GAS, axis), (ecodes.ABS_BRAKE, axis)],
                           ecodes.EV_KEY: [ecodes.BTN_SOUTH]}, name="ecu-sim test pedal")
    try:
        yield device
    finally:
        device.close()


def press(pedal: Any, raw: int) -> None:
    from evdev import ecodes

    pedal.write(ecodes.EV_ABS, ecodes.ABS_GAS, raw)
    pedal.syn()


@pytest.fixture
def driver_process(tmp_path: Path) -> Iterator[Callable[..., multiprocessing.process.BaseProcess]]:
    started: list[tuple[multiprocessing.process.BaseProcess, Path]] = []

    def start(device: str, *options: str) -> multiprocessing.process.BaseProcess:
        log = tmp_path / f"driver{len(started)}.log"
        argv = ["driver", "--iface", "vcan0", "--device", device, *options]
        process = multiprocessing.get_context("fork").Process(target=run_cli, args=(argv, str(log)),
                                                              daemon=True)
        process.start()
        started.append((process, log))
        return process

    yield start
    for process, log in started:
        if process.is_alive():
            process.terminate()
        process.join(timeout=30)
        print(f"--- ecu-sim driver (exit {process.exitcode})\n"
              f"{log.read_text()[-3000:] if log.exists() else ''}")


def wait_for_pedal(capture: RawCapture, pct: int) -> Frame:
    """The first APP frame showing ``pct``; the process may take a while under emulation."""
    return capture.wait_for(lambda f: f.can_id == DRIVER_APP_ID and app_pct(f) == pct, timeout=120)[0]


def test_list_shows_the_virtual_pedal_with_its_axis(pedal: Any, cli_main: Cli) -> None:
    result = cli_main("driver", "--list")

    assert result.status == 0, result.err
    assert f"{pedal.device.path}: ecu-sim test pedal" in result.out
    assert f"ABS_GAS  0..{AXIS_MAX} (now 0)" in result.out


def test_the_app_frames_on_vcan0_follow_the_pedal(
        pedal: Any, capture: RawCapture,
        driver_process: Callable[..., multiprocessing.process.BaseProcess]) -> None:
    process = driver_process(pedal.device.path)
    wait_for_pedal(capture, 0)

    press(pedal, AXIS_MAX // 2)
    wait_for_pedal(capture, 50)
    press(pedal, AXIS_MAX)
    wait_for_pedal(capture, 100)
    press(pedal, AXIS_MAX // 4)
    wait_for_pedal(capture, 25)

    assert process.is_alive()
    capture.clear()
    time.sleep(2.0)
    held = [app_pct(f) for f in capture.frames(lambda f: f.can_id == DRIVER_APP_ID)]
    assert held and set(held) == {25}, "the pedal holds still, so does APP"
    process.terminate()
    process.join(timeout=60)
    assert process.exitcode == 0


def test_a_button_press_on_the_device_is_sent_as_the_resume_command(
        pedal: Any, capture: RawCapture,
        driver_process: Callable[..., multiprocessing.process.BaseProcess]) -> None:
    from evdev import ecodes

    driver_process(pedal.device.path, "--profile", "j1939", "--resume-key", "BTN_SOUTH")
    capture.wait_for(lambda f: f.can_id == J1939_COMMANDS_ID, timeout=120)
    assert all((f.data[0] >> 2) & 0b11 == 0 for f in capture.frames(lambda f: f.can_id == J1939_COMMANDS_ID))

    pedal.write(ecodes.EV_KEY, ecodes.BTN_SOUTH, 1)
    pedal.syn()
    pedal.write(ecodes.EV_KEY, ecodes.BTN_SOUTH, 0)  # a tap, released before the next tick
    pedal.syn()
    pressed = capture.wait_for(lambda f: f.can_id == J1939_COMMANDS_ID and (f.data[0] >> 2) & 0b11 == 1,
                               timeout=120)
    assert pressed[0].data[0] & 0b11 == 0, "cancel (SPN 5603, bits 0-1) stays 00, no action"


def test_a_pedal_that_counts_down_is_calibrated_by_its_released_and_pressed_values(
        pedal: Any, capture: RawCapture,
        driver_process: Callable[..., multiprocessing.process.BaseProcess]) -> None:
    press(pedal, 900)
    driver_process(pedal.device.path, "--axis-released", "900", "--axis-pressed", "100")
    wait_for_pedal(capture, 0)

    press(pedal, 100)
    wait_for_pedal(capture, 100)
    press(pedal, 700)
    wait_for_pedal(capture, 25)
