"""Command line entry point: ``ecu-sim [COMMAND] ...``.

Each subcommand lives in its own module of this package (as in cantools' ``subparsers``) and exposes
``add_arguments(parser)`` and ``run(args) -> int``; its module docstring's first line is its help text.
With no command name, ``ecu-sim`` runs the ECU, so ``ecu-sim --iface vcan0`` does what a user expects.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import importlib
import signal
import sys
from collections.abc import Sequence
from types import ModuleType

from ecu_sim.errors import EcuSimError

#: command name -> module in this package; "run" is the default when no name is given.
COMMANDS: dict[str, str] = {
    "run": "run",
    "ccm": "ccm",
    "simulate": "simulate",
    "link": "link",
    "replay": "replay",
}
DEFAULT_COMMAND = "run"


def _command(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{COMMANDS[name]}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command, so ``ecu-sim link`` never imports cantools."""
    parser = argparse.ArgumentParser(
        prog="ecu-sim",
        description="J1939 truck ECU simulator and cruise control module on a CAN bus.",
        epilog="Without a command, 'ecu-sim' runs the ECU ('ecu-sim run').",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only else COMMANDS:
        module = _command(name)
        doc = (module.__doc__ or name).strip().splitlines()[0]
        command_parser = sub.add_parser(name, help=doc, description=module.__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(command_parser)
        command_parser.set_defaults(handler=module.run)
    return parser


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    # Until a node installs its own handler, SIGTERM ends a starting process like Ctrl-C does:
    # cleanly, with status 0. A watchdog's SIGABRT dumps the stalled stack to the journal.
    signal.signal(signal.SIGTERM, _interrupt)
    with contextlib.suppress(OSError, ValueError):  # stderr without a file descriptor (embedded)
        faulthandler.enable()
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, DEFAULT_COMMAND)
    only = args_list[0] if args_list[0] in COMMANDS else None
    try:
        args = build_parser(only).parse_args(args_list)
        return int(args.handler(args))
    except EcuSimError as exc:
        print(f"ecu-sim: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        return 0
