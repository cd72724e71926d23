"""The truck's totals and slow states that the FMS-Standard interface carries, kept tick by tick.

Each is the integral of what the bus already says, so a reader can check one against the other:

- the high-resolution distance (SPN 917) is the integral of the speed CCVS1 and TCO1 send;
- the total fuel used (SPN 250, 5054) is the truck's fuel used, the integral of LFE1's rate, on
  top of the total the state file kept; the fuel level (SPN 96) falls with it from the tank's
  content;
- the engine hours (SPN 247) count the ticks the engine turns;
- the coolant temperature (SPN 110) follows a first-order lag toward a target set by the load:
  the ambient temperature while the engine stands, a thermostat-held temperature that rises
  with the load while it runs (:data:`WARM_C`, :data:`LOAD_RISE_C`, :data:`TIME_CONSTANT_S`: an
  illustration of a warm-up, not a measured engine);
- the combination weight (SPN 1760, 1585) is the truck's mass with its payload, and the axle
  weights (SPN 582, VW) that mass split by ``[fms] front_axle_share``: an assumption of the
  settings, not a measured truck;
- the tell-tales (FMS1) of what the truck has a state for, by rules of ecu-sim's own
  (:func:`telltales`): the parking brake, the fuel reserve, the coolant, the engine's amber lamp
  (its DM1) and the retarder at work;
- the VIN (SPN 237) is text from the settings, not a number the truck steps: it is written once
  into its message's payload (:func:`fms_texts`).

The totals persist in a state file, written atomically (a temporary file renamed over it), every
:data:`SAVE_EVERY_S` of simulated time, as a truck's odometer keeps its count; the tick that falls
due only takes a snapshot, written once that tick's frames are out. The file's reader and writer
are both here, one format in one module.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Final, NamedTuple

from ecu_sim.errors import ConfigError
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.fms import FmsSettings

#: the coolant's thermostat-held temperature at no load, and its rise at full load, degC
WARM_C: Final = 83.0
LOAD_RISE_C: Final = 12.0
#: the lag of the coolant behind its target, s
TIME_CONSTANT_S: Final = 300.0
#: simulated seconds between two writes of the state file
SAVE_EVERY_S: Final = 10.0
_KPH_TO_MPS: Final = 1.0 / 3.6
#: the vehicle identification number's SPN (VI, PGN 65260)
VIN_SPN: Final = 237


class LampState(IntEnum):
    """What an FMS1 tell-tale shows (FMS-Standard v05, 3 bits each)."""

    OFF = 0
    RED = 1
    YELLOW = 2
    INFO = 3
    NOT_AVAILABLE = 7


#: the fuel level at which the fuel tell-tale lights, %, and the coolant's red one, degC: ecu-sim's
#: own thresholds (the FMS-Standard leaves when a tell-tale lights to the maker)
RESERVE_PCT: Final = 10.0
COOLANT_RED_C: Final = 105.0


class FmsValues(NamedTuple):
    """What the FMS messages carry beyond the powertrain's readings, in the units of their SPNs."""

    total_distance_m: float
    total_fuel_l: float
    engine_hours_h: float
    fuel_level_pct: float
    coolant_c: float
    ambient_c: float
    combination_kg: float
    driver1_state: float
    driver2_state: float
    vehicle_motion: float
    front_axle_kg: float
    rear_axle_kg: float


#: SPN -> the field of :class:`FmsValues` it carries
FMS_SPNS: Final = {917: "total_distance_m", 5054: "total_fuel_l", 247: "engine_hours_h", 96: "fuel_level_pct",
                   110: "coolant_c", 171: "ambient_c", 1760: "combination_kg", 1585: "combination_kg",
                   1612: "driver1_state", 1613: "driver2_state", 1611: "vehicle_motion"}
#: SPN -> the fields it carries on the pages of a multiplexed message, in turn: the axle weight
#: (VW, multiplexed on the axle location SPN 928) front axle first, as J1939 counts axles front
#: to back; a page past the last carries "not available"
PAGED_SPNS: Final = {582: ("front_axle_kg", "rear_axle_kg")}


class Lamps(NamedTuple):
    """The truck's states a tell-tale shows, beside what the FMS state keeps itself."""

    parking_brake: float = 0.0
    retarder_pct: float = math.nan
    engine_lamp: bool = False


@dataclass(frozen=True)
class Telltale:
    """One FMS1 tell-tale ecu-sim shows: its ID (15 x block + status number) and the rule of its
    state, from the truck's lamps, the fuel level (%) and the coolant (degC). Which colour each
    shows is the maker's choice in the FMS-Standard; these are ecu-sim's own."""

    ident: int
    name: str
    state: Callable[[Lamps, float, float], LampState]


def _retarder(lamps: Lamps, fuel_level_pct: float, coolant_c: float) -> LampState:
    if math.isnan(lamps.retarder_pct):
        return LampState.NOT_AVAILABLE
    return LampState.INFO if lamps.retarder_pct < 0.0 else LampState.OFF


#: the tell-tales, in the order :func:`telltales` gives their states: the parking brake red while
#: set, the fuel yellow at the reserve, the coolant red when too hot, the engine yellow while its
#: DM1 lights the amber lamp, the retarder "info" while it brakes (not available without one)
TELLTALES: Final = (
    Telltale(7, "parking_brake",
             lambda lamps, fuel, coolant: LampState.RED if lamps.parking_brake >= 1.0 else LampState.OFF),
    Telltale(10, "fuel_level",
             lambda lamps, fuel, coolant: LampState.YELLOW if fuel <= RESERVE_PCT else LampState.OFF),
    Telltale(11, "coolant",
             lambda lamps, fuel, coolant: LampState.RED if coolant >= COOLANT_RED_C else LampState.OFF),
    Telltale(18, "engine",
             lambda lamps, fuel, coolant: LampState.YELLOW if lamps.engine_lamp else LampState.OFF),
    Telltale(33, "retarder", _retarder),
)


def telltales(lamps: Lamps, fuel_level_pct: float, coolant_c: float) -> tuple[LampState, ...]:
    """The tell-tales' states in :data:`TELLTALES`' order."""
    return tuple(t.state(lamps, fuel_level_pct, coolant_c) for t in TELLTALES)


def fms_texts(settings: FmsSettings) -> dict[int, str]:
    """The text SPNs a restbus signal carries from the settings, by SPN: the VIN when one is set
    (without it VI stays "not available", as a signal with no value does)."""
    return {} if settings.vin is None else {VIN_SPN: settings.vin}


class Totals(NamedTuple):
    """What persists between runs."""

    distance_m: float = 0.0
    fuel_l: float = 0.0
    hours_h: float = 0.0
    in_tank_l: float | None = None


def load_totals(path: str | None) -> Totals:
    """The totals a state file kept; zeros without one. ConfigError names a file it cannot read."""
    if path is None or not os.path.exists(path):
        return Totals()
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return Totals(float(data["distance_m"]), float(data["fuel_l"]), float(data["hours_h"]),
                      float(data["in_tank_l"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"[fms] state_file {path}: not a state file ecu-sim wrote ({exc}); "
                          "move it away to start from zero") from None


def save_totals(path: str, totals: Totals) -> None:
    """Written to a temporary file beside it and renamed over it: a reader or a power cut sees the
    old file or the new one, never half of one."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".fms-", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(totals._asdict(), out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


class FmsState:
    """The totals and the coolant, stepped once a tick."""

    def __init__(self, settings: FmsSettings, period_s: float, combination_kg: float) -> None:
        self._settings = settings
        self._dt = period_s
        self._path = settings.state_file
        start = Totals(*settings.start_totals) if settings.start_totals else load_totals(self._path)
        self._start = start
        self._tank = settings.tank_l
        self._in_tank = settings.tank_l if start.in_tank_l is None else start.in_tank_l
        self._distance = start.distance_m
        self._hours = start.hours_h
        self._coolant = settings.ambient_c
        self._lag = 1.0 - math.exp(-period_s / TIME_CONSTANT_S)
        self._save_every = max(1, ticks_in(SAVE_EVERY_S, period_s))
        front_kg = combination_kg * settings.front_axle_share
        self._fixed = (settings.ambient_c, combination_kg, float(settings.driver1_state),
                       float(settings.driver2_state), front_kg, combination_kg - front_kg)
        #: the totals of the last tick whose save fell due, until :meth:`save_due` writes them
        self._due: Totals | None = None
        self.values = self._values(0.0, 0.0)
        #: the tell-tales' states, in :data:`TELLTALES`' order
        self.lamps = telltales(Lamps(), self.values.fuel_level_pct, self.values.coolant_c)

    def step(self, tick: int, speed_kph: float, fuel_used_l: float, engine_rpm: float,
             load_pct: float, lamps: Lamps) -> None:
        """One tick: ``fuel_used_l`` is the run's fuel so far, ``load_pct`` the engine's (SPN 92),
        ``lamps`` the states the tell-tales show."""
        self._distance += speed_kph * _KPH_TO_MPS * self._dt
        running = engine_rpm > 0.0
        if running:
            self._hours += self._dt / 3600.0
        load = min(max(load_pct, 0.0), 100.0) / 100.0 if math.isfinite(load_pct) else 0.0
        target = WARM_C + LOAD_RISE_C * load if running else self._settings.ambient_c
        self._coolant += (target - self._coolant) * self._lag
        self.values = self._values(fuel_used_l, speed_kph)
        self.lamps = telltales(lamps, self.values.fuel_level_pct, self.values.coolant_c)
        if self._path is not None and tick % self._save_every == self._save_every - 1:
            self._due = self.totals(fuel_used_l)

    def save_due(self) -> None:
        """The totals :meth:`step` marked due, written now: called after the tick's frames are
        out, so the file's fsync never stands between a tick and its sends."""
        due, self._due = self._due, None
        if due is not None and self._path is not None:
            save_totals(self._path, due)

    def totals(self, fuel_used_l: float) -> Totals:
        return Totals(self._distance, self._start.fuel_l + fuel_used_l, self._hours,
                      max(self._in_tank - fuel_used_l, 0.0))

    def _values(self, fuel_used_l: float, speed_kph: float) -> FmsValues:
        ambient, combination, driver1, driver2, front, rear = self._fixed
        level = 100.0 * max(self._in_tank - fuel_used_l, 0.0) / self._tank
        return FmsValues(self._distance, self._start.fuel_l + fuel_used_l, self._hours, level, self._coolant,
                         ambient, combination, driver1, driver2, 1.0 if speed_kph > 0.0 else 0.0, front, rear)

    @property
    def carried(self) -> tuple[float, ...]:
        """What the FMS messages' signals are read from: the values, then the tell-tales' states
        as the numbers FMS1 carries."""
        return (*self.values, *(float(lamp) for lamp in self.lamps))
