"""The controls given ahead, ``[controls] apply`` in the INI, ``--control`` on the command line and a
campaign case's ``controls.apply``, and one a co-simulation peer sends by name.

Their text (ecu_sim.controls.grammar) is read when the settings load. Here each becomes the control
the node's page would send, checked by the same :func:`~ecu_sim.controls.check.check` against the
built node before its first tick, so an unknown message or a value outside its DBC range stops
the run before it starts. A :class:`~ecu_sim.controls.desk.ControlDesk` then applies each one
before its tick and journals it, and the replay applies the journal's lines like any others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ecu_sim.codec.role import RoleCodec
from ecu_sim.controls.check import Control, check
from ecu_sim.controls.desk import ControlDesk
from ecu_sim.controls.grammar import ControlSpecError, parse_control
from ecu_sim.controls.live import ControlRecord
from ecu_sim.controls.node import Controlled
from ecu_sim.controls.refusals import ControlError, Refusal
from ecu_sim.errors import ConfigError
from ecu_sim.runtime.loop import TickObserver
from ecu_sim.runtime.ticks import ticks_in

log = logging.getLogger("ecu_sim")


@dataclass(frozen=True)
class Ahead:
    """A run's controls written ahead, and what planning them takes of the run (its settings'
    ``ahead()``)."""

    #: the controls' texts, e.g. ``stop:TCO1@30``
    texts: tuple[str, ...]
    period_s: float
    #: None: the run goes on until stopped
    duration_s: float | None
    #: where they were given, for an error: ``[controls] apply in FILE``, ``--control``
    origin: str


def plan(ahead: Ahead, built: Controlled, speed: RoleCodec) -> dict[int, list[Control]]:
    """The settings' controls, checked against ``built``, by the tick each acts before.

    A control due when the run is over never acts: a warning says so, as for a fault, since a
    campaign may shorten the runs of a file whose controls stay as written."""
    period, duration, origin = ahead.period_s, ahead.duration_s, ahead.origin
    planned: dict[int, list[Control]] = {}
    for text in ahead.texts:
        for index, timed in enumerate(parse_control(text)):
            if duration is not None and timed.at_s >= duration:
                if not index:  # a window's end that the run does not reach is no news
                    log.warning("control %s acts at %g s, when the run of %g s is already over; it "
                                "will not act", text, timed.at_s, duration)
                continue
            try:
                control = check(timed.body, built, speed, period)
            except ControlError as exc:
                raise ConfigError(f"control {text!r} ({origin}): {exc.reason}") from None
            planned.setdefault(ticks_in(timed.at_s, period), []).append(control)
    return planned


def desk(ahead: Ahead, built: Controlled, speed: RoleCodec,
         journal: Callable[[ControlRecord], None] | None = None) -> ControlDesk | None:
    """A desk for the settings' controls, journaled into ``journal`` (a recording's) when the run
    records; None without any, so a run without controls has no observer more."""
    if not ahead.texts:
        return None
    return ControlDesk(built, journal=journal, planned=plan(ahead, built, speed))


def now(text: str, built: Controlled, speed: RoleCodec, period_s: float) -> Control:
    """A control by name that acts at the next tick (a co-simulation peer's): the ``--control``
    grammar without a time."""
    try:
        timed = parse_control(text)
    except ControlSpecError as exc:
        raise ControlError(Refusal.MALFORMED, str(exc)) from None
    if len(timed) != 1 or timed[0].at_s:
        raise ControlError(Refusal.MALFORMED, f"{text!r}: a control sent while the run goes acts at "
                                              "the next tick; give it without a time")
    return check(timed[0].body, built, speed, period_s)


class ByName:
    """The controls of a stepped ECU (ecu_sim.cosim): the settings' own, at their ticks, and those a
    co-simulation peer sends by name between its steps, each applied before the next tick by one
    desk (``desk``, the stepper's tick observer)."""

    def __init__(self, ahead: Ahead, built: Controlled, speed: RoleCodec) -> None:
        self._planned = bool(ahead.texts)
        self.desk = ControlDesk(built, planned=plan(ahead, built, speed))
        self._built = built
        self._speed = speed
        self._period_s = ahead.period_s

    def observers(self) -> list[TickObserver]:
        """The desk as a tick observer when the settings plan controls; a peer's need none (they are
        applied as they come, while the loop stands), so a run without planned ones pays nothing."""
        return [self.desk] if self._planned else []

    def __call__(self, text: str, before: int) -> str | None:
        """Apply the control ``text`` before tick ``before``: None when applied, else why not."""
        try:
            control = now(text, self._built, self._speed, self._period_s)
        except ControlError as exc:
            return exc.reason
        told: list[str | None] = []
        self.desk.apply_now(control, before, lambda tick, problem: told.append(problem))
        return told[0]
