"""A controller under test's command line for a case, and the check of it before any case runs.

The campaign's ``[program] command`` is a template: the case's bus and settings fill its
placeholders. A placeholder that names nothing, a program that is not there, or SocketCAN asked of
a host without it is refused before the first case, not found out case by case.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from ecu_sim.campaign.spec import Program
from ecu_sim.errors import ConfigError
from ecu_sim.link.private import socketcan_problem
from ecu_sim.settings.model import SECTIONS, Settings

#: the bus's placeholders, by whether the cases run on SocketCAN
_BUS_PLACES = {False: "{channel}, {port}", True: "{iface}, {channel}"}


def command_line(program: Program, settings: Settings, channel: str, port: int, case_id: str) -> list[str]:
    """The program's argv for a case: ``{channel}``, ``{port}``, ``{interface}``, ``{id}``,
    ``{python}`` (the interpreter running ecu-sim) and any setting as ``{section.key}``; on
    SocketCAN ``{iface}`` (also ``{channel}``) instead of ``{port}``."""
    bus: dict[str, object] = ({"iface": channel, "channel": channel, "interface": "socketcan"}
                              if program.socketcan else
                              {"channel": channel, "port": port, "interface": "udp_multicast"})
    places = {**bus, "id": case_id, "python": sys.executable, **{s: getattr(settings, s) for s in SECTIONS}}
    try:
        return [word.format_map(places) for word in shlex.split(program.command)]
    except KeyError as exc:
        name = exc.args[0] if exc.args else "?"
        if name == "iface":
            raise ConfigError(f"{program.origin}: {{iface}} is a SocketCAN interface, and these cases run "
                              "on udp_multicast: use {channel} and {port}, or socketcan = true in "
                              "[program] (--socketcan)") from None
        if name == "port":
            raise ConfigError(f"{program.origin}: {{port}} is a udp_multicast port, and these cases run "
                              "on SocketCAN: use {iface}") from None
        raise ConfigError(f"{program.origin}: the placeholder {{{name}}} names no setting; use "
                          f"{_BUS_PLACES[program.socketcan]}, {{interface}}, {{id}}, {{python}} or "
                          "{section.key}") from None
    except AttributeError as exc:
        raise ConfigError(f"{program.origin}: a placeholder names no setting ({exc})") from None
    except (ValueError, IndexError) as exc:
        raise ConfigError(f"{program.origin}: {exc} (write a literal brace as {{{{ or }}}})") from None


def check(program: Program, settings: Iterable[Settings], folder: str) -> None:
    """Refuse before any case runs a command whose placeholders or program cannot work with some
    case's ``settings``, or SocketCAN asked of a host without it. The host is asked once, and each
    program named once, however many cases name it."""
    argvs = [command_line(program, s, "vcan0" if program.socketcan else "239.74.0.1", 1, "0")
             for s in settings]
    if any(not argv for argv in argvs):
        raise ConfigError(f"{program.origin}: the command is empty")
    for name in dict.fromkeys(argv[0] for argv in argvs):
        if _executable(name, folder) is None:
            raise ConfigError(f"{program.origin}: command not found: {name} (a program on PATH, or a "
                              "path relative to the campaign file)")
    if program.socketcan and (problem := socketcan_problem()) is not None:
        raise ConfigError(f"SocketCAN was asked for (socketcan = true or --socketcan) and {problem}: run "
                          "where vcan exists (scripts/vm-test's VM), or drop it for udp_multicast")


def _executable(name: str, folder: str) -> str | None:
    if os.sep in name:
        path = Path(folder) / name
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(name)
