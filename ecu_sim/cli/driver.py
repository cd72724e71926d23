"""Drive the truck: a pedal (and brake and cruise buttons) from an input device or the keyboard.

The driver's APP goes on the bus under its own source address (--driver-source, default 0x31),
the brake pedal position and the cruise resume/cancel commands too where the DBC has them
(SPN 521, 5604, 5603). Without --device the terminal's keys are the pedals.

Examples:
  ecu-sim driver --list                                 # input devices with absolute axes
  ecu-sim driver --device /dev/input/event5 --axis ABS_Z --brake-axis ABS_RZ --profile j1939
  ecu-sim driver                                        # up/down arrows step the pedal
"""

from __future__ import annotations

import argparse
import logging
from contextlib import AbstractContextManager

from ecu_sim.bus import options as bus_options
from ecu_sim.cli import common
from ecu_sim.nodes.factory import NodeKind
from ecu_sim.pedals import device, keyboard
from ecu_sim.pedals.reading import PedalSource
from ecu_sim.runs.realtime import run_realtime
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.model import Settings
from ecu_sim.settings.sources import add_option
from ecu_sim.settings.values import source_address

#: how long a key press holds the brake or a button (the terminal tells presses, not releases)
KEY_HOLD_S = 0.6


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list", action="store_true",
                        help="list the input devices with absolute axes and exit")
    bus_options.add_arguments(parser)
    common.add_common(parser, sources=("speed",))
    common.timeout_options(parser, "speed")
    group = parser.add_argument_group("controls")
    add_option(group, "--device", key="driver.device", metavar="PATH",
               help="input device, e.g. /dev/input/event5 (default: the keyboard in this terminal)")
    add_option(group, "--axis", key="driver.axis", metavar="NAME",
               help="the pedal's absolute axis (default ABS_GAS; --list shows the device's axes)")
    add_option(group, "--axis-released", key="driver.axis_released", type=int, metavar="RAW",
               help="raw value of the released pedal (default: the axis minimum)")
    add_option(group, "--axis-pressed", key="driver.axis_pressed", type=int, metavar="RAW",
               help="raw value of the fully pressed pedal (default: the axis maximum); below "
                    "--axis-released for a pedal that counts down")
    add_option(group, "--brake-axis", key="driver.brake_axis", metavar="NAME",
               help="the brake pedal's absolute axis (default: no brake pedal)")
    add_option(group, "--brake-released", key="driver.brake_released", type=int, metavar="RAW",
               help="raw value of the released brake pedal (default: the axis minimum)")
    add_option(group, "--brake-pressed", key="driver.brake_pressed", type=int, metavar="RAW",
               help="raw value of the fully pressed brake pedal (default: the axis maximum)")
    add_option(group, "--resume-key", key="driver.resume_key", metavar="NAME",
               help="button that resumes cruise control, e.g. BTN_SOUTH")
    add_option(group, "--cancel-key", key="driver.cancel_key", metavar="NAME",
               help="button that cancels cruise control, e.g. BTN_EAST")
    add_option(group, "--driver-source", key="driver.driver_source", type=source_address, metavar="SA",
               help="J1939 source address of the driver's frames (default 0x31, cab controller)")
    add_option(group, "--step", key="driver.step_pct", type=float, metavar="PCT",
               help="keyboard: pedal travel of one arrow key press (default 5 %%)")
    common.add_fault_and_record_options(parser)


def run(args: argparse.Namespace) -> int:
    if args.list:
        found = device.list_devices()
        print("\n".join(found) if found else "no input device with absolute axes found (a pedal, "
              "wheel or joystick shows up as /dev/input/eventN; check permissions: group 'input')")
        return 0
    settings = common.settings(args)
    if settings.driver.device is not None:
        device.load_evdev()  # a missing extra is reported before anything is opened
    return run_realtime(NodeKind.DRIVER, args, settings, open_pedals, common.web_page(settings))


def open_pedals(settings: Settings) -> AbstractContextManager[PedalSource]:
    """The input device given, or the terminal's keys."""
    d = settings.driver
    if d.device is not None:
        brake = None if d.brake_axis is None else device.Axis(d.brake_axis, d.brake_released,
                                                              d.brake_pressed)
        return device.DeviceSource(d.device, device.Axis(d.axis, d.axis_released, d.axis_pressed),
                                   brake, d.resume_key, d.cancel_key)
    logging.getLogger("ecu_sim").info("keyboard pedal: %s", keyboard.HELP)
    press_reads = max(1, ticks_in(KEY_HOLD_S, settings.run.resolved_period_s))
    return keyboard.TerminalKeys(keyboard.KeyPedal(d.step_pct, press_reads))
