"""Command line entry point: ``ecu-sim [COMMAND] ...``.

Each subcommand lives in its own module of this package (as in cantools' ``subparsers``) and exposes
``add_arguments(parser)`` and ``run(args) -> int``; its module docstring's first line is its help text.
With no command name, ``ecu-sim`` runs the ECU, so ``ecu-sim --iface vcan0`` does what a user expects.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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


def _available() -> dict[str, object]:
    """Import the subcommand modules that exist; a module still missing is simply not offered."""
    modules: dict[str, object] = {}
    for name, module in COMMANDS.items():
        try:
            modules[name] = importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{module}":
                raise
    return modules


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ecu-sim",
        description="J1939 truck ECU simulator and cruise control module on a CAN bus.",
        epilog="Without a command, 'ecu-sim' runs the ECU ('ecu-sim run').",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _available().items():
        doc = (module.__doc__ or name).strip().splitlines()[0]
        command_parser = sub.add_parser(name, help=doc, description=module.__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(command_parser)  # type: ignore[attr-defined]
        command_parser.set_defaults(handler=module.run)  # type: ignore[attr-defined]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, DEFAULT_COMMAND)
    parser = build_parser()
    args = parser.parse_args(args_list)
    try:
        return int(args.handler(args))
    except EcuSimError as exc:
        print(f"ecu-sim: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        return 0
