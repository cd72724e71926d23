"""How a fault is written, and the schedule of faults a run applies, as plain values.

A fault is written as ``KIND[=VALUE][@FROM[-TO|+DURATION]]``, times in seconds from the start of
the run (tick 0), the window including FROM and excluding TO; without a window the fault lasts
the whole run. The same text works on the command line (``--fault``, repeatable), in the
configuration (``[faults] inject``, one per line or separated by ``,``, so no spec may contain a
``,``) and in a scenario file (``--scenario``: one fault per line, ``#`` comments, ``seed = N``).

=============================  ==============================================================
``drop=P``                     drop each frame with probability P (default 1: every frame)
``delay=S``                    each frame carries the value of S seconds earlier (a transport
                               delay in whole periods; the frame rate is unchanged)
``freeze``                     keep sending the value of the window's first tick
``error``                      send the J1939 error indicator instead of the value
``not_available`` (``na``)     send the J1939 not-available value
``offset=X``                   add X to the value, in the signal's unit (km/h or %)
``scale=F``                    multiply the value by F
``silent``                     send nothing at all
``dtc=SPN:FMI``                set this diagnostic trouble code (DM1) while the window lasts;
                               the node's frames are not changed
=============================  ==============================================================

Each kind is one entry of :data:`FAULTS`: the record of its value (how it is read, whether it is
required), its help line, the stage it acts in on a frame (:attr:`FaultValue.STAGE`, the order
the injector applies faults in) and its builder, which makes the :class:`Fault` of a window.
This module knows nothing of settings, codecs or buses, so the configuration can check a spec
when it is loaded and a replay can rebuild a schedule from a recording without either.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ecu_sim.errors import ConfigError
from ecu_sim.registry.family import Family, ParamError, Reader, UnknownKind, param
from ecu_sim.runtime.ticks import WindowError, parse_window

#: faults that set a diagnostic trouble code instead of changing frames
DTC_KIND = "dtc"
#: faults that leave a period without a frame (the kernel's timer cannot withhold one)
WITHHOLDING_FAULTS = frozenset({"drop", "silent", "delay"})
_DTC = re.compile(r"^(?P<spn>\d+):(?P<fmi>\d+)$")
ALIASES = {"na": "not_available", "not-available": "not_available"}
_SPEC = re.compile(r"^(?P<kind>[a-z_-]+)(?:=(?P<value>[^@]+))?(?:@(?P<window>.+))?$")
_SEED = re.compile(r"^seed\s*[=:]?\s*(?P<seed>\S+)$")


@dataclass(frozen=True)
class Fault:
    kind: str
    value: float | None = None
    start_s: float = 0.0
    #: exclusive; None: until the end of the run
    end_s: float | None = None
    #: the (SPN, FMI) of a ``dtc`` fault
    dtc: tuple[int, int] | None = None

    def __str__(self) -> str:
        text = self.kind if self.value is None else f"{self.kind}={self.value:g}"
        if self.dtc is not None:
            text = f"{self.kind}={self.dtc[0]}:{self.dtc[1]}"
        if self.start_s or self.end_s is not None:
            text += f"@{self.start_s:g}"
            if self.end_s is not None:
                text += f"-{self.end_s:g}"
        return text


@dataclass(frozen=True)
class When:
    """What a fault's builder is given beside its value: its kind's name and its window."""

    kind: str
    start_s: float
    end_s: float | None


#: the stages a fault acts in on one frame, in order: the value, the delay, withholding it
VALUE_STAGES, DELAY_STAGE, WITHHOLDING_STAGE, NO_FRAME_STAGE = range(4), 4, 5, 6

#: every fault kind, in the order the messages name them
FAULTS: Family[When, Fault] = Family("fault")


@dataclass(frozen=True)
class FaultValue:
    """A fault without a value; ``STAGE`` is when it acts on a frame among the others."""

    STAGE: ClassVar[int]


def _fault(record: FaultValue, when: When) -> Fault:
    value = getattr(record, "value", None)
    return Fault(when.kind, value if isinstance(value, float) else None, when.start_s, when.end_s,
                 value if isinstance(value, tuple) else None)


def _within(low: float, high: float, low_open: bool) -> Callable[[str], float]:
    def read(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or not (low < value if low_open else low <= value) or value > high:
            raise ValueError(text)
        return value
    return read


def _dtc(text: str) -> tuple[int, int]:
    found = _DTC.match(text.strip())
    if found is None or int(found["spn"]) >= 1 << 19 or int(found["fmi"]) >= 32:
        raise ValueError(text)
    return int(found["spn"]), int(found["fmi"])


_MUST = "the value of {kind} must be {meaning}"
_NEEDS = "{kind} needs a value, {meaning} ({kind}=...)"
_PROBABILITY = Reader(_within(0.0, 1.0, True), "a probability in (0, 1]", refusal=_MUST)
_DELAY = Reader(_within(0.0, math.inf, True), "a delay in seconds, a whole number of periods", refusal=_MUST)
_NUMBER = Reader(_within(-math.inf, math.inf, False), "a finite number in the signal's unit", refusal=_MUST)
_FACTOR = Reader(_within(-math.inf, math.inf, False), "a finite factor", refusal=_MUST)
_DTC_CODE = Reader(_dtc, "SPN:FMI, an SPN 0..524287 and an FMI 0..31, e.g. 91:9", refusal=_MUST)


@dataclass(frozen=True)
class Drop(FaultValue):
    STAGE = WITHHOLDING_STAGE
    #: None: every frame
    value: float | None = param(_PROBABILITY)


@dataclass(frozen=True)
class Delay(FaultValue):
    STAGE = DELAY_STAGE
    value: float | None = param(_DELAY, missing=_NEEDS)


@dataclass(frozen=True)
class Freeze(FaultValue):
    STAGE = 0


@dataclass(frozen=True)
class Scale(FaultValue):
    STAGE = 1
    value: float | None = param(_FACTOR, missing=_NEEDS)


@dataclass(frozen=True)
class Offset(FaultValue):
    STAGE = 2
    value: float | None = param(_NUMBER, missing=_NEEDS)


@dataclass(frozen=True)
class Replaced(FaultValue):
    STAGE = 3


@dataclass(frozen=True)
class Silent(FaultValue):
    STAGE = WITHHOLDING_STAGE


@dataclass(frozen=True)
class DtcCode(FaultValue):
    STAGE = NO_FRAME_STAGE
    value: tuple[int, int] | None = param(_DTC_CODE, missing=_NEEDS)


for _name, _record, _help in (
        ("drop", Drop, "drop each frame with probability P (default 1: every frame)"),
        ("delay", Delay, "each frame carries the value of S seconds earlier (a transport delay in whole "
                         "periods; the frame rate is unchanged)"),
        ("freeze", Freeze, "keep sending the value of the window's first tick"),
        ("error", Replaced, "send the J1939 error indicator instead of the value"),
        ("not_available", Replaced, "send the J1939 not-available value"),
        ("offset", Offset, "add X to the value, in the signal's unit (km/h or %)"),
        ("scale", Scale, "multiply the value by F"),
        ("silent", Silent, "send nothing at all"),
        ("dtc", DtcCode, "set this diagnostic trouble code (DM1) while the window lasts; the node's frames "
                         "are not changed")):
    FAULTS.register(_name, _record, _help)(_fault)


def stage(kind: str) -> int:
    """When a fault of ``kind`` acts on a frame among the others (lower first)."""
    return int(FAULTS[kind].params.STAGE)


def parse_fault(text: str, where: str = "--fault") -> Fault:
    """One fault from its text form; ConfigError names ``where`` and says what is expected."""
    if ";" in text:
        raise ConfigError(f"{where} {text!r}: ';' does not separate faults; put one fault per line or "
                          "separate them by ',' (in an INI file ';' after a space starts a comment)")
    match = _SPEC.match(text.strip().lower())
    if match is None:
        raise ConfigError(f"{where} {text!r}: expected KIND[=VALUE][@FROM[-TO|+DURATION]], "
                          "e.g. drop=0.1, silent@60+5, offset=-3@10-20")
    try:
        kind = FAULTS[ALIASES.get(match["kind"], match["kind"])]
    except UnknownKind:
        raise ConfigError(f"{where} {text!r}: unknown fault {match['kind']!r}; known: "
                          f"{', '.join(FAULTS.names())} (na for not_available)") from None
    given = {} if match["value"] is None else {"value": match["value"].strip()}
    try:
        if given and not kind.parameters():
            raise ParamError(f"{kind.name} takes no value")
        record = kind.read(given)
    except ParamError as exc:
        raise ConfigError(f"{where} {text!r}: {exc}") from None
    try:
        start, end = parse_window(match["window"])
    except WindowError as exc:
        example = ", e.g. @60-70 or @60+10" if exc.malformed else ""
        raise ConfigError(f"{where} {text!r}: {exc}{example}") from None
    return kind.build(record, When(kind.name, start, end))


@dataclass(frozen=True)
class FaultSchedule:
    """Every fault of a run and the seed of its random drops: all a replay needs to repeat them."""

    faults: tuple[Fault, ...]
    seed: int

    @classmethod
    def load(cls, inject: Sequence[str], scenario: str | None = None,
             seed: int | None = None) -> FaultSchedule:
        """The scenario file's faults, then ``inject``; ``seed`` wins over the file's, else 0."""
        faults: list[Fault] = []
        file_seed = None
        if scenario is not None:
            faults, file_seed = read_scenario(scenario)
        faults.extend(parse_fault(text) for text in inject)
        chosen = seed if seed is not None else file_seed
        return cls(tuple(faults), 0 if chosen is None else chosen)


def read_scenario(path: str) -> tuple[list[Fault], int | None]:
    """A scenario file: one fault per line, ``#`` comments, blank lines, and ``seed = N``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the scenario file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"the scenario file {path} is not UTF-8 text") from None
    faults: list[Fault] = []
    seed: int | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"scenario file {path}, line {number}:"
        seed_match = _SEED.match(line.lower())
        if seed_match is not None:
            try:
                seed = int(seed_match["seed"], 0)
            except ValueError:
                raise ConfigError(f"{where} the seed must be an integer (got {seed_match['seed']!r})"
                                  ) from None
            continue
        faults.append(parse_fault(line, where))
    return faults, seed


def describe(faults: Iterable[Fault]) -> str:
    return ", ".join(str(f) for f in faults) or "none"


def after_the_run(faults: Iterable[Fault], duration_s: float | None) -> list[Fault]:
    """Faults whose window starts at or after the end of a run of ``duration_s``: they never act."""
    if duration_s is None:
        return []
    return [fault for fault in faults if fault.start_s >= duration_s]
