"""Faults injected on purpose into what a node sends, to see how the controller under test copes.

A fault is written as ``KIND[=VALUE][@FROM[-TO|+DURATION]]``, times in seconds from the start of
the run (tick 0), the window including FROM and excluding TO; without a window the fault lasts
the whole run. The same text works on the command line (``--fault``, repeatable) and in a
scenario file (``--scenario``: one fault per line, ``#`` comments, and ``seed = N``).

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
=============================  ==============================================================

Faults act on the payload between the codec and the bus, in this order: freeze, scale, offset,
error/not available, delay, then drop and silent; values stay within the DBC range (the codec
clamps). Random drops come from one generator seeded by ``--fault-seed`` (default: the
scenario's seed, else 0) that draws once per transmitted tick and active drop fault, so the same
run repeats exactly, and a recorded run replays exactly. Each fault window is logged when it
starts and ends, with its tick; each frame a fault changes is logged at debug level.
"""

from __future__ import annotations

import logging
import math
import random
import re
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ecu_sim.bus.transmit import Transmitter
from ecu_sim.codec.profile import Invalid, RoleCodec
from ecu_sim.errors import ConfigError
from ecu_sim.settings.load import FaultSettings

log = logging.getLogger(__name__)

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
}
ALIASES = {"na": "not_available", "not-available": "not_available"}
_SPEC = re.compile(r"^(?P<kind>[a-z_-]+)(?:=(?P<value>[^@]+))?(?:@(?P<window>.+))?$")
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_WINDOW = re.compile(rf"^(?P<start>{_NUMBER})(?:(?P<sep>[-+])(?P<end>{_NUMBER}))?$")
_SEED = re.compile(r"^seed\s*[=:]?\s*(?P<seed>\S+)$")
_EPSILON = 1e-9
#: the order faults act in on one frame: value faults, then the delay, then withholding
_ORDER = {"freeze": 0, "scale": 1, "offset": 2, "error": 3, "not_available": 3, "delay": 4,
          "drop": 5, "silent": 5}
_WITHHOLDING = frozenset({"drop", "silent"})


@dataclass(frozen=True)
class Fault:
    kind: str
    value: float | None = None
    start_s: float = 0.0
    #: exclusive; None: until the end of the run
    end_s: float | None = None

    def __str__(self) -> str:
        text = self.kind if self.value is None else f"{self.kind}={self.value:g}"
        if self.start_s or self.end_s is not None:
            text += f"@{self.start_s:g}"
            if self.end_s is not None:
                text += f"-{self.end_s:g}"
        return text


def parse_fault(text: str, where: str = "--fault") -> Fault:
    """One fault from its text form; ConfigError names ``where`` and says what is expected."""
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
    if match["value"] is not None:
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
    start, end = 0.0, None
    if match["window"] is not None:
        window = _WINDOW.match(match["window"])
        if window is None:
            raise ConfigError(f"{where} {text!r}: the window must be @FROM, @FROM-TO or "
                              "@FROM+DURATION in seconds, e.g. @60-70 or @60+10")
        start = float(window["start"])
        if window["end"] is not None:
            end = float(window["end"]) + (start if window["sep"] == "+" else 0.0)
            if end <= start:
                raise ConfigError(f"{where} {text!r}: the window ends before it starts")
    return Fault(kind, value, start, end)


@dataclass(frozen=True)
class FaultSchedule:
    faults: tuple[Fault, ...]
    seed: int

    @classmethod
    def from_settings(cls, settings: FaultSettings) -> FaultSchedule:
        faults: list[Fault] = []
        seed = None
        if settings.scenario is not None:
            faults, seed = read_scenario(settings.scenario)
        faults.extend(parse_fault(text) for text in settings.inject)
        if settings.seed is not None:
            seed = settings.seed
        return cls(tuple(faults), 0 if seed is None else seed)


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


def not_available_payload(codec: RoleCodec) -> bytes:
    payload = codec.encode(math.nan)
    if codec.decode(payload) is not Invalid.NOT_AVAILABLE:
        raise ConfigError(f"fault not_available: {codec.message_name}.{codec.signal_name} is not a "
                          "J1939 parameter, so it has no not-available value")
    return payload


def error_indicator_payload(codec: RoleCodec) -> bytes:
    """The not-available payload with the one bit cleared that makes it the error indicator.

    In J1939 the error indicator is the not-available value minus one in the top byte (0xFE..
    for 0xFF..) or in a discrete field (10 for 11), so exactly one bit of the signal differs. It
    is found through the codec's own decoder, whatever the signal's position and byte order.
    """
    na = int.from_bytes(not_available_payload(codec), "big")
    nbits = 8 * codec.length
    for bit in range(nbits):
        candidate = (na & ~(1 << bit)).to_bytes(codec.length, "big")
        if codec.decode(candidate) is Invalid.ERROR_INDICATOR:
            return candidate
    raise ConfigError(f"fault error: {codec.message_name}.{codec.signal_name} is not a J1939 "
                      "parameter, so it has no error indicator")


class _Window:
    """A fault with its window in ticks and what it did so far."""

    __slots__ = ("active", "end", "fault", "frozen", "hits", "start", "ticks", "value")

    def __init__(self, fault: Fault, period_s: float) -> None:
        self.fault = fault
        self.start = math.ceil(fault.start_s / period_s - _EPSILON)
        self.end = math.inf if fault.end_s is None else math.ceil(fault.end_s / period_s - _EPSILON)
        self.value = 1.0 if fault.value is None else fault.value
        self.ticks = 0
        if fault.kind == "delay":
            ticks = self.value / period_s
            self.ticks = round(ticks)
            if self.ticks < 1 or abs(ticks - self.ticks) > 1e-6:
                raise ConfigError(f"fault {fault}: the delay must be a whole number of periods "
                                  f"({period_s:g} s), at least one")
        self.active = False
        self.frozen: bytes | None = None
        self.hits = 0


class FaultInjector:
    """Stands between a node and its transmitter and applies the schedule, tick by tick."""

    def __init__(self, transmitter: Transmitter, codec: RoleCodec, schedule: FaultSchedule,
                 period_s: float, name: str = "") -> None:
        self._transmitter = transmitter
        self._codec = codec
        self._period_s = period_s
        self._name = name or f"{codec.message_name}.{codec.signal_name}"
        self.schedule = schedule
        self._windows = sorted((_Window(fault, period_s) for fault in schedule.faults),
                               key=lambda w: _ORDER[w.fault.kind])
        kinds = {w.fault.kind for w in self._windows}
        self._not_available = not_available_payload(codec) if "not_available" in kinds else b""
        self._error = error_indicator_payload(codec) if "error" in kinds else b""
        delays = [w.ticks for w in self._windows if w.fault.kind == "delay"]
        self._history: deque[tuple[int, bytes]] | None = (
            deque(maxlen=max(delays) + 1) if delays else None)
        self._rng = random.Random(schedule.seed)
        #: frames each kind of fault changed or withheld
        self.injected: Counter[str] = Counter()

    def send(self, tick: int, data: bytes) -> bool:
        active = self._active(tick)
        payload: bytes | None = data
        if self._history is not None:
            self._history.append((tick, data))  # what the delay sends later, after value faults
        for window in active:  # sorted: value faults first, then the delay, then withholding
            kind = window.fault.kind
            if kind in _WITHHOLDING:
                if payload is None or (kind == "drop" and self._rng.random() >= window.value):
                    continue
                payload = None
            elif kind == "delay":
                payload = self._delayed(tick - window.ticks)
            else:
                assert payload is not None
                payload = self._change(window, payload)
                if self._history is not None:
                    self._history[-1] = (tick, payload)
            self._hit(window, tick)
        if payload is None:
            return False
        self._transmitter.send(payload)
        return True

    def _hit(self, window: _Window, tick: int) -> None:
        window.hits += 1
        self.injected[window.fault.kind] += 1
        log.debug("%s: tick %d: %s", self._name, tick, window.fault)

    def _change(self, window: _Window, payload: bytes) -> bytes:
        kind = window.fault.kind
        if kind == "freeze":
            if window.frozen is None:
                window.frozen = payload
            return window.frozen
        if kind == "error":
            return self._error
        if kind == "not_available":
            return self._not_available
        value = self._codec.decode(payload)
        if isinstance(value, Invalid):
            return payload
        return self._codec.encode(value * window.value if kind == "scale" else value + window.value)

    def _active(self, tick: int) -> list[_Window]:
        active = []
        for window in self._windows:
            on = window.start <= tick < window.end
            if on != window.active:
                window.active = on
                window.frozen = None
                t = tick * self._period_s
                if on:
                    log.info("%s: fault %s starts at tick %d (%.1f s)", self._name, window.fault, tick, t)
                else:
                    log.info("%s: fault %s ended at tick %d (%.1f s): %d frames affected",
                             self._name, window.fault, tick, t, window.hits)
            if on:
                active.append(window)
        return active

    def finish(self, tick: int) -> None:
        """Log the windows still open when the run ends at ``tick``: every fault gets its end line."""
        for window in self._windows:
            if window.active:
                window.active = False
                log.info("%s: fault %s still active when the run ended at tick %d (%.1f s): "
                         "%d frames affected", self._name, window.fault, tick, tick * self._period_s,
                         window.hits)

    def _delayed(self, tick: int) -> bytes | None:
        """The newest payload of a tick no later than ``tick``; None before the run had one."""
        assert self._history is not None
        for then, payload in reversed(self._history):
            if then <= tick:
                return payload
        return None

    def summary(self) -> str:
        if not self.injected:
            return "none yet"
        return ", ".join(f"{kind} {n}" for kind, n in sorted(self.injected.items()))


def describe(faults: Iterable[Fault]) -> str:
    return ", ".join(str(f) for f in faults) or "none"


def after_the_run(faults: Iterable[Fault], duration_s: float | None) -> list[Fault]:
    """Faults whose window starts at or after the end of a run of ``duration_s``: they never act."""
    if duration_s is None:
        return []
    return [fault for fault in faults if fault.start_s >= duration_s]


def check(faults: Sequence[Fault], codec: RoleCodec, period_s: float) -> None:
    """Raise ConfigError now, before the bus is opened, for a schedule that cannot be applied."""
    for fault in faults:
        _Window(fault, period_s)
        if fault.kind == "error":
            error_indicator_payload(codec)
        elif fault.kind == "not_available":
            not_available_payload(codec)
