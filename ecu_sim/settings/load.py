"""One validated, typed configuration from defaults, an INI file, the environment and the command line.

Later sources win: built-in defaults < a service's (the FMS state file in systemd's
``STATE_DIRECTORY``) < ``--config FILE`` < ``ECU_SIM_<SECTION>_<KEY>`` variables <
command-line options, so a service's shared file can be overridden per interface by a variable and
by hand on the command line. An unknown key is an error instead of a silent no-op, and every
mistake names where the value was given.

Only what the settings can tell by themselves is checked here; what needs the DBC (the default
period, the speed range, source-address filters) is checked by ecu_sim.runs.prepare, which names
origins through ``Settings.origins``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import parse_fault
from ecu_sim.settings import sources
from ecu_sim.settings.model import BUS_SECTION, SECTIONS, FaultSettings, Settings, locate
from ecu_sim.settings.sources import Given
from ecu_sim.settings.values import convert

#: the commands a service unit runs, the only ones its environment's defaults apply to: a
#: simulation or a campaign repeats bit for bit and must not start from an odometer an earlier
#: run left in the state directory
SERVICE_COMMANDS = ("run",)


def load(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Settings:
    """Build the settings for this run; any mistake raises ConfigError naming where it is."""
    path = getattr(args, "config", None)
    environ = os.environ if environ is None else environ
    service = getattr(args, "command", None) in SERVICE_COMMANDS
    return build([
        *(sources.read_service_defaults(environ) if service else []),
        *(sources.read_ini(path) if path else []),
        *sources.read_environment(environ),
        *sources.read_command_line(args),
    ])


def build(found: Iterable[Given]) -> Settings:
    """Settings from values in order of precedence, whatever their source (a campaign's cases give
    theirs directly); any mistake raises ConfigError naming where the value was given."""
    given: dict[str, dict[str, Given]] = {name: {} for name in (*SECTIONS, BUS_SECTION)}
    for value in found:  # in order of precedence: a later source replaces an earlier one
        given[value.section][value.key] = value
    parts = {name: _build(cls, name, given[name]) for name, cls in SECTIONS.items()}
    bus = {key: str(value.raw) for key, value in given[BUS_SECTION].items()}
    origins = {value.dotted: value.origin for section in given.values() for value in section.values()}
    settings = Settings(bus=bus, origins=origins, **parts)
    _check_faults(settings.faults, origins)
    return settings


def _check_faults(faults: FaultSettings, origins: Mapping[str, str]) -> None:
    """Each ``inject`` entry parses; a mistake names the file, variable or option it came from."""
    origin = origins.get("faults.inject", "--fault")
    flag = sources.flag_of("faults.inject") or "--fault"
    where = flag if origin.endswith("command line") else origin
    for text in faults.inject:
        parse_fault(text, where)


def _build(cls: type[Any], section: str, given: Mapping[str, Given]) -> Any:
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    for key, value in given.items():
        if key not in known:
            raise ConfigError(f"unknown key {key!r} ({value.origin}); "
                              f"[{section}] knows: {', '.join(sorted(known))}")
        kwargs[key] = convert(value.raw, hints[key], key, value.origin)
    try:
        built = cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[{section}]: {exc}") from None
    problems = built.problems() if hasattr(built, "problems") else []
    if problems:
        origins = {value.dotted: value.origin for value in given.values()}
        raise ConfigError("; ".join(locate(problem, section, origins) for problem in problems))
    return built
