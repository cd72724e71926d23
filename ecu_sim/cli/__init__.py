"""Command line entry point: ``ecu-sim [COMMAND] ...``.

Each subcommand lives in its own module of this package (as in cantools' ``subparsers``) and exposes
``add_arguments(parser)`` and ``run(args) -> int``; its module docstring's first line is its help text.
With no command name, ``ecu-sim`` runs the ECU, so ``ecu-sim --iface vcan0`` does what a user expects.
``ecu-sim --version`` imports no command at all, so it answers at once even on a slow board.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import importlib
import signal
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import NoReturn

import ecu_sim
from ecu_sim.cli import usage
from ecu_sim.errors import ConfigError, EcuSimError

#: command name -> module in this package; "run" is the default when no name is given.
COMMANDS: dict[str, str] = {
    "run": "run",
    "ccm": "ccm",
    "simulate": "simulate",
    "link": "link",
    "replay": "replay",
    "cosim": "cosim",
    "export-fmu": "export_fmu",
    "plot": "plot",
    "driver": "driver",
    "campaign": "campaign",
    "j1939": "j1939",
    "attack": "attack",
    "dataset": "dataset",
    "calibration": "calibration",
    "diag": "diag",
}
DEFAULT_COMMAND = "run"
#: options of ``ecu-sim`` itself; any other first word that is not a command goes to the default command
HELP_OPTIONS = ("-h", "--help")
VERSION_OPTIONS = ("-V", "--version")


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked for (argparse's own ``version``
    action wants the string when the parser is built, which would cost every start a metadata lookup)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[object] | None, option_string: str | None = None) -> None:
        print(f"{parser.prog} {ecu_sim.__version__}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """argparse's parser with a mistake reported in one line that says where the help is, not a
    usage dump: the usage of a command with thirty options buries the one line that matters."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _command(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{COMMANDS[name]}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command, so ``ecu-sim link`` never imports cantools."""
    return _parser([only] if only else COMMANDS)


def _parser(names: Iterable[str]) -> argparse.ArgumentParser:
    """The top-level parser with the subcommands ``names`` (none for ``--version``)."""
    parser = _Parser(
        prog="ecu-sim",
        description="J1939 truck ECU simulator and cruise control module on a CAN bus.",
        epilog="Without a command, 'ecu-sim' runs the ECU ('ecu-sim run').",
    )
    parser.add_argument(*VERSION_OPTIONS, action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in names:
        module = _command(name)
        doc = (module.__doc__ or name).strip().splitlines()[0]
        command_parser = sub.add_parser(name, help=doc, description=module.__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(command_parser)
        command_parser.set_defaults(handler=module.run)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The command line as ``main`` reads it, without running it: a first word that is neither a
    command nor an option of ``ecu-sim`` itself starts the default command's arguments, and only the
    chosen command's module is imported. A mistake exits 2 with one line: a misspelt command gets
    the closest one, an option of another command the commands that take it."""
    args_list = list(argv)
    if args_list and not args_list[0].startswith("-") and args_list[0] not in COMMANDS:
        raise ConfigError(usage.unknown_command(args_list[0], COMMANDS))
    if not args_list or args_list[0] not in (*COMMANDS, *HELP_OPTIONS, *VERSION_OPTIONS):
        args_list.insert(0, DEFAULT_COMMAND)
    first = args_list[0]
    names = [first] if first in COMMANDS else [] if first in VERSION_OPTIONS else list(COMMANDS)
    args, extra = _parser(names).parse_known_args(args_list)
    if extra:
        raise ConfigError(usage.unknown_arguments(first, extra, _takers))
    return args


def _takers(option: str) -> list[str]:
    """The commands that take ``option`` (all of them imported: this runs only after a mistake)."""
    sub = next(a for a in _parser(COMMANDS)._actions if isinstance(a, argparse._SubParsersAction))
    return [name for name, parser in sub.choices.items() if option in parser._option_string_actions]


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    # Until a node installs its own handler, SIGTERM ends a starting process like Ctrl-C does:
    # cleanly, with status 0. A watchdog's SIGABRT dumps the stalled stack to the journal.
    signal.signal(signal.SIGTERM, _interrupt)
    with contextlib.suppress(OSError, ValueError):  # stderr without a file descriptor (embedded)
        faulthandler.enable()
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        return int(args.handler(args))
    except EcuSimError as exc:
        print(f"ecu-sim: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        return 0
