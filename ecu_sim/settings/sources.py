"""Where settings come from: an INI file, ``ECU_SIM_<SECTION>_<KEY>`` variables, command-line options,
and the defaults a service's environment implies (systemd's ``STATE_DIRECTORY``).

Each source hands over raw values together with the words that name their origin, so a mistake
found at any later point can say where to fix it. Which source wins, and turning text into typed
values, is ecu_sim.settings.load's job.

The INI dialect is the one people write without reading a manual: ``;`` and ``#`` start a comment
on a line of their own, and after whitespace at the end of a value (``name = amp  ; the testbed``);
a value continues on indented lines, which is how a list is written, one item per line. A comment
character inside a value (``dbc = /etc/ecu-sim/truck#2.dbc``) is kept, as configparser does.
"""

from __future__ import annotations

import argparse
import configparser
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ecu_sim.errors import ConfigError
from ecu_sim.settings.model import BUS_SECTION, SECTIONS

ENV_PREFIX = "ECU_SIM_"
#: names the configuration file, not a value in it; other ECU_SIM_ variables outside the sections
#: (e.g. ECU_SIM_SOAK of the tests) are not ours either
_NOT_SETTINGS = frozenset({ENV_PREFIX + "CONFIG"})
#: systemd's variable naming a unit's ``StateDirectory=`` (colon-separated when it names several)
STATE_DIRECTORY = "STATE_DIRECTORY"
#: the FMS totals' file in that directory
FMS_STATE_FILE = "fms.json"
COMMENT_PREFIXES = ("#", ";")
_CLI_PREFIX = "cfg:"
#: ``section.key`` -> the command-line option that sets it, to name it in messages
_FLAGS: dict[str, str] = {}


@dataclass(frozen=True)
class Given:
    """One value as a source gave it: text from a file or a variable, typed by argparse otherwise."""

    section: str
    key: str
    raw: Any
    origin: str

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.key}"


def add_option(parser: argparse._ActionsContainer, *flags: str, key: str, **kwargs: Any) -> None:
    """A command-line option that overrides ``section.key`` of the configuration when given."""
    _FLAGS[key] = max(flags, key=len)
    parser.add_argument(*flags, dest=_CLI_PREFIX + key, default=argparse.SUPPRESS, **kwargs)


def flag_of(dotted: str) -> str | None:
    """The command-line option that sets ``section.key``, once a command has added it."""
    return _FLAGS.get(dotted)


def ini_parser() -> configparser.ConfigParser:
    """The INI dialect of ``--config``; see the module's docstring."""
    return configparser.ConfigParser(interpolation=None, comment_prefixes=COMMENT_PREFIXES,
                                     inline_comment_prefixes=COMMENT_PREFIXES)


def _known_sections() -> str:
    return ", ".join(f"[{s}]" for s in (*SECTIONS, BUS_SECTION))


def read_ini(path: str) -> list[Given]:
    parser = ini_parser()
    try:
        with open(path, encoding="utf-8") as handle:
            parser.read_file(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read the configuration file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"the configuration file {path} is not UTF-8 text") from None
    except configparser.Error as exc:
        raise ConfigError(f"the configuration file {path} is not a valid INI file: {exc}") from None
    if parser.defaults():
        # configparser would copy [DEFAULT] into every section, where its keys would be unknown.
        raise ConfigError(f"unknown section [{parser.default_section}] in {path}; known sections: "
                          f"{_known_sections()}")
    found: list[Given] = []
    for section in parser.sections():
        if section not in SECTIONS and section != BUS_SECTION:
            raise ConfigError(f"unknown section [{section}] in {path}; known sections: {_known_sections()}")
        found.extend(Given(section, key, raw, f"[{section}] {key} in {path}")
                     for key, raw in parser.items(section))
    return found


def read_service_defaults(environ: Mapping[str, str]) -> list[Given]:
    """What a service's environment implies, below every other source: under a systemd unit with a
    ``StateDirectory=``, the FMS totals persist there (``[fms] state_file``), so a truck's odometer
    survives restarts without a setting, and so do each node's UDS security state and its
    calibration memory (``[diagnostics] state_dir``); a file, variable or option still says otherwise."""
    directory = environ.get(STATE_DIRECTORY, "").split(":")[0]
    if not directory:
        return []
    origin = f"the service's state directory (environment variable {STATE_DIRECTORY})"
    return [Given("fms", "state_file", os.path.join(directory, FMS_STATE_FILE), origin),
            Given("diagnostics", "state_dir", directory, origin)]


def read_environment(environ: Mapping[str, str]) -> list[Given]:
    found: list[Given] = []
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in _NOT_SETTINGS:
            continue
        section, _, key = name[len(ENV_PREFIX):].lower().partition("_")
        if section not in SECTIONS and section != BUS_SECTION:
            continue  # not a configuration section: some other tool's ECU_SIM_ variable
        if not key:
            raise ConfigError(f"environment variable {name} names no configuration item; use "
                              f"{ENV_PREFIX}<SECTION>_<KEY>, e.g. {ENV_PREFIX}TRUCK_MASS_KG")
        found.append(Given(section, key, raw, f"environment variable {name}"))
    return found


def read_command_line(args: argparse.Namespace) -> list[Given]:
    """The options the user typed: argparse leaves the others out (``default=SUPPRESS``)."""
    found: list[Given] = []
    for dest, value in vars(args).items():
        if dest.startswith(_CLI_PREFIX):
            dotted = dest[len(_CLI_PREFIX):]
            section, key = dotted.split(".", 1)
            flag = _FLAGS.get(dotted)
            origin = f"{flag} on the command line" if flag else "command line"
            found.append(Given(section, key, value, origin))
    return found
