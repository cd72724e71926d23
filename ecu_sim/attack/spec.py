"""How an attack is written: ``KIND[:KEY=VALUE,...][@FROM[-TO|+DURATION]]``, as plain values.

The window is the fault grammar's (:mod:`ecu_sim.faults.spec`): seconds from the start of the
run, FROM included, TO excluded, no window meaning the whole run. The parameters name the
attack's target, the source address it sends from, its rate in frames a second and its values;
each kind says which it takes, their defaults and the values they may have in its one entry of
the attack table (:data:`ecu_sim.attack.family.ATTACKS`), so a misspelt key, a value out of range
or a choice not offered is refused when the text is read. Lists (several spoofed sources) are
separated by ``/``.

Reading a spec opens nothing, so a campaign file or a command line is checked before a bus or a
DBC is.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cantools.database.can import Database

# each module registers its kinds in the table, in the order --list shows them
from ecu_sim.attack import kinds, replay, session, udsdoor, udsreflash, unlock  # noqa: F401
from ecu_sim.attack.family import ATTACKS, Context
from ecu_sim.attack.tick import Frames
from ecu_sim.errors import ConfigError
from ecu_sim.registry.family import Kind, ParamError, UnknownKind
from ecu_sim.runtime.ticks import WindowError, parse_window

__all__ = ["ATTACKS", "Attack", "check_windows", "parse_attack"]
_SPEC = re.compile(r"^(?P<kind>[A-Za-z0-9_]+)(?::(?P<params>[^@]*))?(?:@(?P<window>.+))?$")
_EXAMPLE = "e.g. tsc1:target=0x00,speed=2000@30+10"


@dataclass(frozen=True)
class Attack:
    """One attack of a run: its kind, its parameters (the kind's record), its window."""

    kind: str
    #: the kind's parameter record (e.g. :class:`ecu_sim.attack.kinds.Tsc1`)
    params: Any
    start_s: float = 0.0
    #: exclusive; None: until the end of the run
    end_s: float | None = None
    #: the text it was written as, for labels and manifests
    text: str = ""

    def values(self) -> tuple[tuple[str, Any], ...]:
        """The parameters by key, in the kind's order."""
        return ATTACKS[self.kind].values(self.params)

    def frames(self, database: Database, period_s: float, rng: random.Random) -> Frames:
        """The attack's frames at each tick of its window; ConfigError when the DBC lacks what
        it imitates."""
        return ATTACKS[self.kind].build(self.params, Context(self.text, database, period_s, rng))


def parse_attack(text: str, where: str = "--attack") -> Attack:
    """One attack from its text form; ConfigError names ``where`` and what is expected."""
    match = _SPEC.match(text.strip())
    if match is None:
        raise ConfigError(f"{where} {text!r}: expected KIND[:KEY=VALUE,...][@FROM[-TO|+DURATION]], "
                          f"{_EXAMPLE}")
    try:
        kind = ATTACKS[match["kind"].lower()]
    except UnknownKind as exc:
        raise ConfigError(f"{where} {text!r}: {exc}") from None
    params = _params(kind, match["params"] or "", f"{where} {text!r}")
    start, end = _window(match["window"], f"{where} {text!r}")
    return Attack(kind.name, params, start, end, text.strip())


def _params(kind: Kind[Context, Frames], text: str, where: str) -> Any:
    given: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not value.strip():
            raise ConfigError(f"{where}: {item!r} is not KEY=VALUE")
        given[key.strip().lower()] = value.strip()
    try:
        return kind.read(given)
    except ParamError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _window(text: str | None, where: str) -> tuple[float, float | None]:
    try:
        return parse_window(text)
    except WindowError as exc:
        example = ", e.g. @30+10" if exc.malformed else ""
        raise ConfigError(f"{where}: {exc}{example}") from None


def check_windows(attacks: Iterable[Attack], duration_s: float | None) -> None:
    """ConfigError for an attack whose window starts at or after the end of a run of ``duration_s``
    or ends after it: it would be labelled in windows no frame of the run falls in."""
    if duration_s is None:
        return
    for attack in attacks:
        if attack.start_s >= duration_s or (attack.end_s is not None and attack.end_s > duration_s):
            raise ConfigError(f"--attack {attack.text!r}: the window reaches past the run's end at "
                              f"{duration_s:g} s; shorten it or give a longer --duration")
