"""Set up a SocketCAN interface: create a vcan, or set a controller's bit rate (needs root).

Examples:
  sudo ecu-sim link vcan0 --create
  sudo ecu-sim link can0 --bitrate 250000 --restart-ms 100 --berr-reporting on
  ecu-sim link can0 --show
  sudo ecu-sim link can0 --restart

Changes are made only where the interface differs, so running the same command twice does
nothing the second time.  A controller is taken down to change it and brought up afterwards.
--restart brings a controller back from bus-off (as `ip link set can0 type can restart` does);
it is needed only with --restart-ms 0, where the kernel leaves a bus-off controller off until
someone restarts it, and does nothing when the controller is not bus-off.
Without --create, --restart or a setting, the interface is shown (as with --show).
"""

from __future__ import annotations

import argparse

from ecu_sim.link.apply import configure, ensure_vcan, link_state, restart
from ecu_sim.link.plan import LinkSettings, check_settings
from ecu_sim.link.show import format_state
from ecu_sim.settings.values import TRUTH_WORDS


def _on_off(value: str) -> bool:
    """argparse type for on/off switches: ``ip link``'s on/off, and every word an INI file takes."""
    try:
        return TRUTH_WORDS[value.strip().lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"expected on or off, not {value!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="interface name, e.g. vcan0 or can0")
    parser.add_argument("--create", action="store_true",
                        help="create NAME as a virtual CAN (vcan) interface if missing, and bring it up")
    controller = parser.add_argument_group("CAN controller (real hardware only)")
    controller.add_argument("--bitrate", type=int, metavar="N", help="bit rate in bit/s (J1939: 250000)")
    controller.add_argument("--restart-ms", type=int, metavar="MS",
                            help="restart automatically MS ms after bus-off (0: stay off until --restart)")
    controller.add_argument("--berr-reporting", type=_on_off, metavar="on|off",
                            help="report every bus error as an error frame")
    controller.add_argument("--listen-only", type=_on_off, metavar="on|off",
                            help="never transmit, not even ACKs (to watch a live bus safely)")
    controller.add_argument("--restart", action="store_true",
                            help="restart the controller if it is bus-off (needed with --restart-ms 0, "
                                 "where it stays off otherwise); does nothing when it is not bus-off")
    parser.add_argument("--show", action="store_true",
                        help="print the controller state and error counters (also after a change)")


def run(args: argparse.Namespace) -> int:
    name: str = args.name
    wanted = LinkSettings(args.bitrate, args.restart_ms, args.berr_reporting, args.listen_only)
    check_settings(wanted.bitrate, wanted.restart_ms)  # before --create changes anything
    if args.create:
        _report(name, ensure_vcan(name))
    if wanted.any_set:
        _report(name, configure(name, bitrate=wanted.bitrate, restart_ms=wanted.restart_ms,
                                berr_reporting=wanted.berr_reporting, listen_only=wanted.listen_only))
    if args.restart:
        restarted = restart(name)
        print(f"{name}: {', '.join(restarted)}" if restarted else f"{name}: unchanged (not bus-off)")
    if args.show or not (args.create or args.restart or wanted.any_set):
        print(format_state(link_state(name)))
    return 0


def _report(name: str, changes: list[str]) -> None:
    print(f"{name}: {', '.join(changes)}" if changes else f"{name}: unchanged")
