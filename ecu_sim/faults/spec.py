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

This module knows nothing of settings, codecs or buses, so the configuration can check a spec
when it is loaded and a replay can rebuild a schedule from a recording without either.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ecu_sim.errors import ConfigError
from ecu_sim.runtime.ticks import WindowError, parse_window

#: kind -> (takes a value, value required, description of the value)
KINDS: dict[str, tuple[bool, bool, str]] = {
    "drop": (True, False, "a probability in (0, 1]"),
    "delay": (True, True, "a delay in seconds, a whole number of periods"),
    "freeze": (False, False, ""),
    "error": (False, False, ""),
    "not_available": (False, False, ""),
    "offset": (True, True, "a finite number in the signal's unit"),
    "scale": (True, True, "a finite factor"),
    "silent": (False, False, ""),
    "dtc": (True, True, "SPN:FMI, an SPN 0..524287 and an FMI 0..31, e.g. 91:9"),
}
#: faults that set a diagnostic trouble code instead of changing frames
DTC_KIND = "dtc"
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


def parse_fault(text: str, where: str = "--fault") -> Fault:
    """One fault from its text form; ConfigError names ``where`` and says what is expected."""
    if ";" in text:
        raise ConfigError(f"{where} {text!r}: ';' does not separate faults; put one fault per line or "
                          "separate them by ',' (in an INI file ';' after a space starts a comment)")
    match = _SPEC.match(text.strip().lower())
    if match is None:
        raise ConfigError(f"{where} {text!r}: expected KIND[=VALUE][@FROM[-TO|+DURATION]], "
                          "e.g. drop=0.1, silent@60+5, offset=-3@10-20")
    kind = ALIASES.get(match["kind"], match["kind"])
    if kind not in KINDS:
        raise ConfigError(f"{where} {text!r}: unknown fault {match['kind']!r}; known: "
                          f"{', '.join(KINDS)} (na for not_available)")
    takes_value, needs_value, meaning = KINDS[kind]
    value: float | None = None
    dtc = None
    if kind == DTC_KIND and match["value"] is not None:
        dtc = _parse_dtc(match["value"].strip(), f"{where} {text!r}: the value of {kind} must be {meaning}")
    elif match["value"] is not None:
        if not takes_value:
            raise ConfigError(f"{where} {text!r}: {kind} takes no value")
        try:
            value = float(match["value"])
        except ValueError:
            raise ConfigError(f"{where} {text!r}: the value of {kind} must be {meaning}") from None
        if not math.isfinite(value) or (kind == "drop" and not 0.0 < value <= 1.0) or (
                kind == "delay" and value <= 0.0):
            raise ConfigError(f"{where} {text!r}: the value of {kind} must be {meaning}")
    elif needs_value:
        raise ConfigError(f"{where} {text!r}: {kind} needs a value, {meaning} ({kind}=...)")
    try:
        start, end = parse_window(match["window"])
    except WindowError as exc:
        example = ", e.g. @60-70 or @60+10" if exc.malformed else ""
        raise ConfigError(f"{where} {text!r}: {exc}{example}") from None
    return Fault(kind, value, start, end, dtc)


def _parse_dtc(text: str, problem: str) -> tuple[int, int]:
    found = _DTC.match(text)
    if found is None or int(found["spn"]) >= 1 << 19 or int(found["fmi"]) >= 32:
        raise ConfigError(problem)
    return int(found["spn"]), int(found["fmi"])


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
