"""One validated, typed configuration from defaults, an INI file, the environment and the command line.

Later sources win: built-in defaults < ``--config FILE`` < ``ECU_SIM_<SECTION>_<KEY>`` variables <
command-line options. Every INI section maps onto one dataclass and every key onto one field, so
the file format documents itself and an unknown key is an error instead of a silent no-op.

The message profile is loaded here too, once, because some settings only make sense against it:
the loop period defaults to the DBC's cycle time of the speed message, speeds must lie within the
speed signal's DBC range, and a source-address filter needs a J1939 parameter group.
"""

from __future__ import annotations

import argparse
import configparser
import dataclasses
import math
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ecu_sim.codec.profile import DEFAULT_PERIOD_S, Profile, RoleCodec
from ecu_sim.control.pi import PiParams
from ecu_sim.errors import ConfigError
from ecu_sim.vehicle.model import TruckParams

ENV_PREFIX = "ECU_SIM_"
_CLI_PREFIX = "cfg:"
#: ``section.key`` -> the command-line option that sets it, to name it in messages
_FLAGS: dict[str, str] = {}
#: the smallest input timeout, in periods: a shorter one would hold a frame for no tick at all
_MIN_TIMEOUT_PERIODS = 1.0
_EPSILON = 1e-9


@dataclass(frozen=True)
class ProfileSettings:
    """Which message set is on the wire and whose frames count as input."""

    name: str = "amp"
    dbc: str | None = None
    speed_signal: str | None = None
    app_signal: str | None = None
    app_source: int | None = None
    speed_source: int | None = None


@dataclass(frozen=True)
class RunSettings:
    """How a node runs: its schedule, timeouts and the scenario it starts from."""

    #: default: the DBC's GenMsgCycleTime of the speed message, else 0.1 s (see ``load``)
    period_s: float = DEFAULT_PERIOD_S
    app_timeout_s: float | None = None
    speed_timeout_s: float | None = None
    initial_speed_kph: float = 80.0
    set_speed_kph: float = 90.0
    grade_pct: float | None = None
    grade_file: str | None = None
    duration_s: float | None = None
    status_interval_s: float = 1.0
    log_level: str = "info"
    #: auto: the kernel's broadcast manager sends on SocketCAN, user space elsewhere; or kernel, user
    tx_mode: str = "auto"

    def input_timeout_s(self, explicit: float | None) -> float:
        """An input is missing once older than this; default three periods, as the issue asks."""
        return 3 * self.period_s if explicit is None else explicit

    def problems(self) -> list[str]:
        found = []
        if not (math.isfinite(self.period_s) and self.period_s > 0):
            found.append(f"period_s must be > 0 (got {self.period_s})")
        for name in ("app_timeout_s", "speed_timeout_s", "duration_s"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                found.append(f"{name} must be > 0 (got {value})")
            elif (name != "duration_s" and value is not None and math.isfinite(self.period_s)
                  and self.period_s > 0 and value / self.period_s + _EPSILON < _MIN_TIMEOUT_PERIODS):
                found.append(f"{name} must be at least one period, period_s = {self.period_s:g} s "
                             f"(the minimum), or every input would count as missing at once "
                             f"(got {value})")
        # The speed limits come from the DBC: see _check_against_profile.
        for name in ("initial_speed_kph", "set_speed_kph"):
            if not math.isfinite(getattr(self, name)):
                found.append(f"{name} must be a finite number (got {getattr(self, name)})")
        if self.grade_pct is not None and self.grade_file is not None:
            found.append("grade_pct and grade_file exclude each other: give one")
        if self.tx_mode not in ("auto", "kernel", "user"):
            found.append(f"tx_mode must be auto, kernel or user (got {self.tx_mode!r})")
        if self.log_level.lower() not in ("debug", "info", "warning", "error"):
            found.append(f"log_level must be debug, info, warning or error (got {self.log_level!r})")
        return found


@dataclass(frozen=True)
class FaultSettings:
    """Faults injected on purpose into what a node sends (``run`` and ``ccm``; see ecu_sim.faults)."""

    #: fault specifications, e.g. ``drop=0.1`` or ``silent@60+5``; ``--fault`` may be repeated
    inject: tuple[str, ...] = ()
    #: a scenario file: one specification per line, and optionally ``seed = N``
    scenario: str | None = None
    #: seed of the random faults (default: the scenario's seed, else 0), so a run is repeatable
    seed: int | None = None


#: python-can writers whose files python-can reads back with every flag the nodes look at
RECORD_FORMATS = (".log", ".asc", ".blf")


@dataclass(frozen=True)
class RecordSettings:
    """``--record``: every frame received and sent, for analysis and for ``ecu-sim replay``."""

    file: str | None = None
    #: start a new file when the current one reaches this size; 0 = one file
    max_bytes: int = 0

    def problems(self) -> list[str]:
        found = []
        if self.file is not None and not self.file.lower().endswith(RECORD_FORMATS):
            found.append(f"file must end in .log, .asc or .blf, the formats that replay reads back "
                         f"(got {self.file!r})")
        if self.max_bytes < 0:
            found.append(f"max_bytes must be >= 0 (got {self.max_bytes})")
        return found


@dataclass(frozen=True)
class Settings:
    profile: ProfileSettings = field(default_factory=ProfileSettings)
    truck: TruckParams = field(default_factory=TruckParams)
    controller: PiParams = field(default_factory=PiParams)
    run: RunSettings = field(default_factory=RunSettings)
    faults: FaultSettings = field(default_factory=FaultSettings)
    record: RecordSettings = field(default_factory=RecordSettings)
    #: the [bus] section, passed to python-can (interface, channel, bitrate, backend keywords)
    bus: Mapping[str, str] = field(default_factory=dict)
    #: the DBC ``load`` parsed to check these settings, with the profile section it was loaded for,
    #: so a run does not parse it a second time (``runner.load_profile``)
    loaded_profile: tuple[ProfileSettings, Profile] | None = field(default=None, compare=False,
                                                                    repr=False)


#: INI section -> dataclass; the [bus] section is free-form and goes to python-can.
SECTIONS: dict[str, type[Any]] = {
    "profile": ProfileSettings,
    "truck": TruckParams,
    "controller": PiParams,
    "run": RunSettings,
    "faults": FaultSettings,
    "record": RecordSettings,
}


def add_option(parser: argparse._ActionsContainer, *flags: str, key: str, **kwargs: Any) -> None:
    """A command-line option that overrides ``section.key`` of the configuration when given."""
    _FLAGS[key] = max(flags, key=len)
    parser.add_argument(*flags, dest=_CLI_PREFIX + key, default=argparse.SUPPRESS, **kwargs)


def source_address(text: str) -> int:
    """A J1939 source address as typed by a person: 38, 0x26.

    ``argparse.ArgumentTypeError`` says why not, so ``--app-source 300`` prints the valid range.
    """
    try:
        value = int(text.strip(), 0)
    except ValueError:
        value = -1
    if not 0 <= value <= 253:
        raise argparse.ArgumentTypeError(
            f"a J1939 source address is a number 0..253, decimal or 0x hex, e.g. 38 or 0x26 (got {text!r})")
    return value


def load(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Settings:
    """Build the settings for this run; any mistake raises ConfigError naming where it is."""
    values: dict[str, dict[str, tuple[str, Any]]] = {name: {} for name in (*SECTIONS, "bus")}
    path = getattr(args, "config", None)
    if path:
        for section, key, raw in _read_ini(path):
            values[section][key] = (f"[{section}] {key} in {path}", raw)
    for section, key, raw in _read_environment(os.environ if environ is None else environ):
        values[section][key] = (f"environment variable {ENV_PREFIX}{section.upper()}_{key.upper()}", raw)
    for dest, value in vars(args).items():
        if dest.startswith(_CLI_PREFIX):
            dotted = dest[len(_CLI_PREFIX):]
            section, key = dotted.split(".", 1)
            flag = _FLAGS.get(dotted)
            values[section][key] = (f"{flag} on the command line" if flag else "command line", value)
    profile_settings: ProfileSettings = _build(ProfileSettings, "profile", values["profile"])
    profile = Profile.load(profile_settings.name, profile_settings.dbc,
                           speed_signal=profile_settings.speed_signal, app_signal=profile_settings.app_signal)
    if "period_s" not in values["run"]:
        values["run"]["period_s"] = (_period_origin(profile), profile.period_s)
    parts = {name: _build(cls, name, values[name]) for name, cls in SECTIONS.items() if name != "profile"}
    bus = {key: str(raw) for key, (_, raw) in values["bus"].items()}
    settings = Settings(bus=bus, profile=profile_settings, loaded_profile=(profile_settings, profile),
                        **parts)
    origins = {f"{section}.{key}": origin for section, given in values.items()
               for key, (origin, _) in given.items()}
    _check_against_profile(settings, profile, origins)
    _check_faults(settings.faults, origins)
    return settings


def _period_origin(profile: Profile) -> str:
    cycle_ms = profile.speed.message.cycle_time
    if cycle_ms is not None and cycle_ms > 0:
        return f"GenMsgCycleTime {cycle_ms} ms of {profile.speed.message_name} in {profile.dbc_path}"
    return f"the default, {profile.speed.message_name} in {profile.dbc_path} has no GenMsgCycleTime"


def _check_against_profile(settings: Settings, profile: Profile, origins: Mapping[str, str]) -> None:
    """What only the DBC can tell: the speed range and whether a role carries a source address."""
    found: list[str] = []
    speed = profile.speed
    unit = f" {speed.signal.unit}" if speed.signal.unit else ""
    for key in ("initial_speed_kph", "set_speed_kph"):
        value = getattr(settings.run, key)
        if not speed.minimum <= value <= speed.maximum:
            found.append(
                f"{key} must be within the DBC range of the speed signal {_signal_text(speed)} in "
                f"{profile.dbc_path}, {speed.minimum:g}..{speed.maximum:g}{unit} "
                f"(got {value:g}, {origins.get('run.' + key, 'the default')})")
    for key, codec in (("app_source", profile.app), ("speed_source", profile.speed)):
        if getattr(settings.profile, key) is not None and not codec.is_j1939:
            found.append(
                f"{key} ({origins.get('profile.' + key, 'given')}) filters by J1939 source address, but "
                f"the {key.split('_')[0].replace('app', 'APP')} message {codec.message_name} "
                f"({_ident(codec)}) in {profile.dbc_path} is not a J1939 parameter group: its "
                f"identifier carries no source address. Remove {key}, or mark the message as a J1939 "
                'PG in the DBC (BA_ "VFrameFormat" ... 3 or BA_ "ProtocolType" "J1939").')
    if found:
        raise ConfigError("; ".join(found))


def _signal_text(codec: RoleCodec) -> str:
    return f"{codec.message_name}.{codec.signal_name}"


def _ident(codec: RoleCodec) -> str:
    return f"ID 0x{codec.frame_id:08X}" if codec.is_extended_id else f"ID 0x{codec.frame_id:03X}"


def _check_faults(faults: FaultSettings, origins: Mapping[str, str]) -> None:
    """Each ``inject`` entry parses; a mistake names the file, variable or option it came from."""
    from ecu_sim.faults.injector import (
        parse_fault,  # imported late: ecu_sim.faults.injector imports this module
    )

    origin = origins.get("faults.inject", "--fault")
    where = _FLAGS.get("faults.inject", "--fault") if origin.endswith("command line") else origin
    for text in faults.inject:
        parse_fault(text, where)


def _read_ini(path: str) -> list[tuple[str, str, str]]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with open(path, encoding="utf-8") as handle:
            parser.read_file(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read the configuration file {path}: {exc.strerror}") from None
    except configparser.Error as exc:
        raise ConfigError(f"the configuration file {path} is not a valid INI file: {exc}") from None
    found: list[tuple[str, str, str]] = []
    for section in parser.sections():
        if section not in SECTIONS and section != "bus":
            raise ConfigError(f"unknown section [{section}] in {path}; known sections: "
                              f"{', '.join(f'[{s}]' for s in (*SECTIONS, 'bus'))}")
        found.extend((section, key, raw) for key, raw in parser.items(section))
    return found


def _read_environment(environ: Mapping[str, str]) -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name == ENV_PREFIX + "CONFIG":
            continue
        rest = name[len(ENV_PREFIX):].lower()
        section, _, key = rest.partition("_")
        if section not in SECTIONS and section != "bus":
            continue  # not a configuration section: some other tool's ECU_SIM_ variable
        if not key:
            raise ConfigError(f"environment variable {name} names no configuration item; use "
                              f"{ENV_PREFIX}<SECTION>_<KEY>, e.g. {ENV_PREFIX}TRUCK_MASS_KG")
        found.append((section, key, raw))
    return found


def _build(cls: type[Any], section: str, given: Mapping[str, tuple[str, Any]]) -> Any:
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, (origin, raw) in given.items():
        if key not in known:
            raise ConfigError(f"unknown key {key!r} ({origin}); "
                              f"[{section}] knows: {', '.join(sorted(known))}")
        kwargs[key] = _convert(raw, hints[key], key, origin)
    try:
        built = cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[{section}]: {exc}") from None
    problems = built.problems() if hasattr(built, "problems") else []
    if problems:
        origins = {key: origin for key, (origin, _) in given.items()}
        raise ConfigError("; ".join(_locate(problem, origins) for problem in problems))
    return built


def _locate(problem: str, origins: Mapping[str, str]) -> str:
    key = problem.split(" ", 1)[0]
    return f"{problem} ({origins[key]})" if key in origins else problem


def _convert(raw: Any, hint: Any, key: str, origin: str) -> Any:
    if typing.get_origin(hint) is tuple:
        # A list: repeated options from argparse, or lines (or ';'-separated items) of an INI value.
        items = raw.replace(";", "\n").splitlines() if isinstance(raw, str) else raw
        return tuple(item.strip() for item in items if item.strip())
    if not isinstance(raw, str):
        return raw  # already typed by argparse
    target = next((t for t in typing.get_args(hint) if t is not type(None)), hint)
    if raw.strip().lower() in ("", "none") and type(None) in typing.get_args(hint):
        return None
    if target is int and key.endswith("_source"):
        try:
            return source_address(raw)
        except argparse.ArgumentTypeError as exc:
            raise ConfigError(f"{key}: {exc} ({origin})") from None
    try:
        if target is bool:
            return raw.strip().lower() in ("1", "yes", "true", "on")
        return target(raw.strip())
    except ValueError:
        raise ConfigError(f"{key} must be a {getattr(target, '__name__', target)} "
                          f"(got {raw!r}, {origin})") from None
