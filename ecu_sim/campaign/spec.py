"""A campaign file (TOML) read into plain data, every value with the line it was written on.

The settings a case varies are named as in the ``--config`` INI file, ``section.key`` (written as
a TOML dotted key, ``run.set_speed_kph = 90``, or under a table, ``[matrix.run]``). The sections
are the settings' own (``ecu_sim.settings.model.SECTIONS``), looked up when the file is read, so
a section or key the settings gain is usable here without a change to this package. ``driver``
is the one section of its own: who works the pedal, as ``simulate``'s ``--set-speed``/``--app``/
``--no-ccm`` choose.

tomllib reports where the syntax is wrong but not where a well-formed value sits, so the line of
a key is found by scanning the text for it: what a person needs to fix a value is its line.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecu_sim.errors import ConfigError
from ecu_sim.settings.model import SECTIONS

#: the pseudo-section for who works the pedal: ``mode`` ccm, tsc1 (the CCM with ``ccm.command =
#: tsc1``: TSC1 and XBR instead of the pedals), pedal or none, and ``app_pct``
DRIVER_SECTION = "driver"
DRIVER_KEYS = {"mode": ("ccm", "tsc1", "pedal", "none", "program"), "app_pct": None}
#: ``driver.mode = program``: the campaign's ``[program]``, another process, works the pedal
PROGRAM_MODE = "program"
#: the pseudo-section of an attacker on the bus: ``kind``, an ``--attack`` spec or ``none`` (several
#: separated by ``;``), and ``seed``, the seed of its random frames (ecu_sim.runs.attacked)
ATTACK_SECTION = "attack"
ATTACK_KEYS = ("kind", "seed")
NO_ATTACK = "none"
#: the distributions of ``[random]``: name -> number of parameters (None: a list of choices)
DISTRIBUTIONS = {"uniform": 2, "integers": 2, "choice": None}
_TOP_LEVEL = ("campaign", "base", "matrix", "case", "random", "program")
_OPTIONS = {"name": str, "settle_band_kph": float, "config": str, "distance_m": float}
_RANDOM_OPTIONS = {"count": int, "seed": int}
_PROGRAM_OPTIONS = {"command": str, "grace_s": float, "silent_s": float, "flood_fps": float,
                    "repeat": int, "cosim": bool, "socketcan": bool}


@dataclass(frozen=True)
class Program:
    """A controller under test: the command that starts it, and when it counts as failed.

    The command is not part of a case's id, so the cases of two versions of a controller, run
    from the same file with another command, are matched by ``campaign compare``."""

    command: str
    #: where the command was given, for errors: ``[program] command in FILE line N``
    origin: str
    #: seconds between SIGTERM and SIGKILL when the case is over
    grace_s: float = 2.0
    #: a controller that has sent no frame this long after the start never sends: the case fails
    silent_s: float = 5.0
    #: more frames than this in one second of the run is a flood: the case fails
    flood_fps: float = 1000.0
    #: runs of each case (real time is not repeatable: the verdict weighs the spread between them)
    repeat: int = 1
    #: the program speaks the co-simulation protocol: the case runs in virtual time, in lockstep
    cosim: bool = False
    #: each case on a vcan of its own (``{iface}``) instead of a host-local udp_multicast group
    socketcan: bool = False


@dataclass(frozen=True)
class Value:
    """One setting as the file gives it, and where: ``section.key`` and its line."""

    dotted: str
    value: Any
    line: int


@dataclass(frozen=True)
class Campaign:
    """Everything a campaign file says, unexpanded; ``folder`` is where its relative paths start."""

    path: Path
    name: str
    settle_band_kph: float = 1.0
    config: str | None = None
    #: each case ends where its truck has driven this far (its duration a limit only); None: at its
    #: duration. Controllers that drive at other speeds are then compared over the same road.
    distance_m: float | None = None
    base: tuple[Value, ...] = ()
    matrix: tuple[Value, ...] = ()
    cases: tuple[tuple[Value, ...], ...] = ()
    random: tuple[Value, ...] = ()
    random_count: int = 0
    random_seed: int = 0
    program: Program | None = None
    text: str = field(default="", repr=False, compare=False)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def where(self, value: Value) -> str:
        return f"{value.dotted} in {self.path} line {value.line}"


def load(path: str | Path) -> Campaign:
    """Read and check a campaign file; ConfigError names the key and its line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the campaign file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"the campaign file {path} is not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the campaign file {path} is not valid TOML: {exc}") from None
    return _Reader(path, text).campaign(data)


class _Reader:
    """Turns the parsed tables into a Campaign, naming the line of anything wrong."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()
        self.text = text

    def fail(self, problem: str, table: str, dotted: str, nth: int = 0) -> ConfigError:
        line = line_of(self.lines, table, dotted, nth)
        at = f" line {line}" if line else ""
        return ConfigError(f"{self.path}{at}: {problem}")

    def campaign(self, data: Mapping[str, Any]) -> Campaign:
        for name in data:
            if name not in _TOP_LEVEL:
                raise self.fail(f"unknown table [{name}]; a campaign has "
                                f"{', '.join(f'[{t}]' for t in _TOP_LEVEL)}", "", name)
        options = self.options(data.get("campaign", {}), "campaign", _OPTIONS)
        random_table = dict(data.get("random", {}))
        random_options = self.options({k: random_table.pop(k) for k in _RANDOM_OPTIONS if k in random_table},
                                      "random", _RANDOM_OPTIONS)
        cases = data.get("case", [])
        if not isinstance(cases, list):
            raise self.fail("write each explicit case as [[case]]", "", "case")
        campaign = Campaign(
            path=self.path, name=str(options.get("name", self.path.stem)), text=self.text,
            settle_band_kph=float(options.get("settle_band_kph", 1.0)), config=options.get("config"),
            distance_m=self.distance(options),
            base=self.values(data.get("base", {}), "base"),
            matrix=self.values(data.get("matrix", {}), "matrix", lists=True),
            cases=tuple(self.values(case, "case", nth=i) for i, case in enumerate(cases)),
            random=self.values(random_table, "random", draws=True),
            random_count=int(random_options.get("count", 0)), random_seed=int(random_options.get("seed", 0)),
            program=self.program(data.get("program")))
        if campaign.random and not campaign.random_count:
            raise self.fail("[random] draws nothing: give count = N", "random", campaign.random[0].dotted)
        return campaign

    def distance(self, options: Mapping[str, Any]) -> float | None:
        if "distance_m" not in options:
            return None
        value = float(options["distance_m"])
        if not (math.isfinite(value) and value > 0.0):
            raise self.fail(f"distance_m must be a distance > 0 in metres (got {value!r}), e.g. a "
                            "whole number of laps of the route", "campaign", "distance_m")
        return value

    def program(self, table: Any) -> Program | None:
        if table is None:
            return None
        found = self.options(table, "program", _PROGRAM_OPTIONS)
        if not str(found.get("command", "")).strip():
            raise self.fail("[program] needs command = \"...\": the controller under test's command line",
                            "", "program")
        for key in ("grace_s", "silent_s", "flood_fps", "repeat"):
            if key in found and not found[key] > 0:
                raise self.fail(f"{key} must be > 0 (got {found[key]!r})", "program", key)
        if found.get("cosim") and found.get("socketcan"):
            raise self.fail("cosim = true steps the ECU over a UDP port, so there is no CAN bus to put "
                            "on SocketCAN: drop socketcan or cosim", "program", "socketcan")
        origin = f"[program] command in {self.path} line {line_of(self.lines, 'program', 'command')}"
        numbers = {k: v for k, v in found.items() if k != "command"}
        return Program(command=str(found["command"]), origin=origin, **numbers)

    def options(self, table: Any, name: str, known: Mapping[str, type]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in dict(table).items():
            if key not in known:
                raise self.fail(f"unknown key {key!r} in [{name}]; it knows: {', '.join(known)}", name, key)
            kind = known[key]
            if (isinstance(value, bool) and kind is not bool) or not isinstance(
                    value, (kind, int) if kind is float else kind):
                raise self.fail(f"{key} must be a {kind.__name__} (got {value!r})", name, key)
            found[key] = value
        return found

    def values(self, table: Mapping[str, Any], name: str, lists: bool = False, draws: bool = False,
               nth: int = 0) -> tuple[Value, ...]:
        found = []
        for dotted, value in flatten(table):
            line = line_of(self.lines, name, dotted, nth)
            problem = key_problem(dotted) or _value_problem(value, lists, draws)
            if problem:
                raise self.fail(f"{dotted}: {problem}", name, dotted, nth)
            found.append(Value(dotted, value, line))
        return tuple(found)


def flatten(table: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``section.key`` and value pairs of a table written with dotted keys or sub-tables."""
    for section, inner in table.items():
        if isinstance(inner, Mapping) and not _is_draw(inner):
            for key, value in inner.items():
                yield f"{section}.{key}", value
        else:
            yield section, inner


def key_problem(dotted: str) -> str | None:
    """Why ``section.key`` is no setting, or None when it is one."""
    section, _, key = dotted.partition(".")
    if section == DRIVER_SECTION:
        known = list(DRIVER_KEYS)
    elif section == ATTACK_SECTION:
        known = list(ATTACK_KEYS)
    elif section in SECTIONS:
        known = [f.name for f in dataclasses.fields(SECTIONS[section]) if f.init]
    else:
        return (f"unknown section {section!r}; settings are section.key with section one of "
                f"{', '.join([*SECTIONS, DRIVER_SECTION, ATTACK_SECTION])}")
    if key not in known:
        return f"unknown key {key!r}; [{section}] knows: {', '.join(sorted(known))}"
    return None


def _is_draw(value: Mapping[str, Any]) -> bool:
    return len(value) == 1 and next(iter(value)) in DISTRIBUTIONS


def _value_problem(value: Any, lists: bool, draws: bool) -> str | None:
    if draws:
        if not (isinstance(value, Mapping) and _is_draw(value)):
            return f"a random setting is one of {', '.join(f'{{{d} = [...]}}' for d in DISTRIBUTIONS)}"
        kind, args = next(iter(value.items()))
        wanted = DISTRIBUTIONS[kind]
        if not isinstance(args, list) or not args or (wanted is not None and len(args) != wanted):
            return f"{kind} takes {'a list of choices' if wanted is None else '[low, high]'} (got {args!r})"
        numbers = all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args)
        if wanted is not None and not numbers:
            return f"{kind} takes numbers (got {args!r})"
        return None
    if lists:
        if not isinstance(value, list) or not value:
            return f"a matrix setting lists its values, e.g. [1, 2] (got {value!r})"
        return next((p for p in (_scalar_problem(v) for v in value) if p), None)
    return _scalar_problem(value)


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, (str, int, float, bool)):
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return None  # a list setting, e.g. faults.inject
    return f"a setting is a number, a word, true/false or a list of words (got {value!r})"


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\"' -]+?)\s*=")


def line_of(lines: list[str], table: str, dotted: str, nth: int = 0) -> int:
    """The line (from 1) where ``dotted`` is set in ``table`` (its ``nth`` instance for an array of
    tables), 0 when it cannot be found; a top-level table's own header when ``table`` is empty."""
    current, seen = "", -1
    for number, line in enumerate(lines, 1):
        header = _HEADER.match(line)
        if header:
            current = _norm(header.group(1))
            if current == table and line.lstrip().startswith("[["):
                seen += 1
            if not table and current.split(".")[0] == dotted:
                return number
            continue
        key = _KEY.match(line)
        if not key or not table or current.split(".")[0] != table:
            continue
        if line.lstrip().startswith("[[") or (seen != nth and current == table and seen >= 0):
            continue
        full = ".".join([*current.split(".")[1:], _norm(key.group(1))])
        if full == dotted or dotted.startswith(full + "."):  # the key itself, or its inline table
            return number
    return 0


def _norm(key: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in key.split("."))
