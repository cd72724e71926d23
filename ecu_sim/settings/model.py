"""The settings of a run as plain frozen data, and what makes a value unusable on its own.

Nothing here reads a file, the environment or a DBC: settings can be built in a test, restored
from a recording and compared, and the checks that need the DBC live with the code that loads it
(ecu_sim.runs.prepare). Every INI section maps onto one dataclass and every key onto one field, so
the file format documents itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ecu_sim.controls.grammar import ControlSettings as ControlSettings
from ecu_sim.controls.planned import Ahead
from ecu_sim.cruise.modes import ControllerSettings
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.runtime.tuning import GC_MODES, PRIORITY_RANGE, parse_cpus
from ecu_sim.settings.calibration import CalibrationSettings as CalibrationSettings
from ecu_sim.settings.diagnostics import DiagnosticsSettings as DiagnosticsSettings
from ecu_sim.settings.fms import FmsSettings as FmsSettings
from ecu_sim.settings.j1939 import NETWORKS as NETWORKS
from ecu_sim.settings.j1939 import POWERTRAIN as POWERTRAIN
from ecu_sim.settings.j1939 import J1939Settings as J1939Settings
from ecu_sim.vehicle.drive import PRESETS
from ecu_sim.vehicle.params import TruckParams
from ecu_sim.vehicle.road import ROUTE_ENDS
from ecu_sim.vehicle.route import MAX_ABS_GRADE_PCT

#: the words ``[run] log_level`` and ``--log-level`` accept, least severe first
LOG_LEVELS = ("debug", "info", "warning", "error")
#: who times the transmissions: auto = the kernel's broadcast manager on SocketCAN, user elsewhere
TX_MODES = ("auto", "kernel", "user")
#: python-can writers whose files python-can reads back with every flag the nodes look at
RECORD_FORMATS = (".log", ".asc", ".blf")
#: MCAP: written by ecu_sim.io.mcap_format (the ``mcap`` extra), tick journal inside, one file
MCAP_FORMAT = ".mcap"


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

    #: None: the DBC's GenMsgCycleTime of the speed message, else 0.1 s; only the DBC can tell, so
    #: ecu_sim.runs.prepare fills it in
    period_s: float | None = None
    app_timeout_s: float | None = None
    speed_timeout_s: float | None = None
    initial_speed_kph: float = 80.0
    set_speed_kph: float = 90.0
    grade_pct: float | None = None
    grade_file: str | None = None
    duration_s: float | None = None
    status_interval_s: float = 1.0
    log_level: str = "info"
    tx_mode: str = "auto"
    #: ``udp:HOST:PORT``: the ECU steps this external truck instead of its own model (ecu_sim.cosim.plant)
    plant: str | None = None
    #: how the operating system and the interpreter treat a real-time loop (ecu_sim.runtime.tuning)
    timer_slack_us: float = 1.0
    spin_us: float = 1000.0
    gc: str = "default"
    cpu_affinity: str | None = None
    #: 0: normal scheduling; 1..99: SCHED_FIFO at this priority
    realtime_priority: int = 0
    lock_memory: bool = False
    #: no: frames of the last hundredth of a period wait a tick rather than delay the send
    drain_at_deadline: bool = True
    #: ``HOST:PORT`` or ``PORT`` (host 127.0.0.1): serve the node's page there (ecu_sim.web.wiring)
    web: str | None = None
    #: on a non-loopback address, the page's plots and state need the token too, not only controls
    web_read_needs_token: bool = False
    #: more names the page answers to besides its address (a reverse proxy's, a DNS name); a
    #: request naming any other host is refused (DNS rebinding, ecu_sim.web.guard)
    web_allowed_hosts: tuple[str, ...] = ()
    #: the page's recording from tick 0, for its download that replays; no: none, and ``--web``
    #: costs a tick no more than its snapshots while nobody looks
    web_record: bool = True

    @property
    def resolved_period_s(self) -> float:
        """The loop period once ecu_sim.runs.prepare has taken it from the DBC if none was given."""
        if self.period_s is None:
            raise ValueError("period_s is not resolved yet: pass the settings through "
                             "ecu_sim.runs.prepare.prepare first")
        return self.period_s

    def input_timeout_s(self, explicit: float | None) -> float:
        """Older than this, an input counts as missing; by default three periods: one lost frame is not."""
        return 3 * self.resolved_period_s if explicit is None else explicit

    def problems(self) -> list[str]:
        found = []
        period = self.period_s
        if period is not None and not (math.isfinite(period) and period > 0):
            found.append(f"period_s must be > 0 (got {period})")
            period = None
        for name in ("app_timeout_s", "speed_timeout_s", "duration_s"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                found.append(f"{name} must be > 0 (got {value})")
            elif (name != "duration_s" and value is not None and period is not None
                  and ticks_in(value, period) < 1):
                found.append(f"{name} must be at least one period, period_s = {period:g} s "
                             f"(the minimum), or every input would count as missing at once "
                             f"(got {value})")
        # The speed limits come from the DBC: see ecu_sim.runs.prepare.
        for name in ("initial_speed_kph", "set_speed_kph"):
            if not math.isfinite(getattr(self, name)):
                found.append(f"{name} must be a finite number (got {getattr(self, name)})")
        if self.grade_pct is not None and self.grade_file is not None:
            found.append("grade_pct and grade_file exclude each other: give one")
        if self.grade_pct is not None and not abs(self.grade_pct) <= MAX_ABS_GRADE_PCT:
            found.append(f"grade_pct must be within +-{MAX_ABS_GRADE_PCT:g} % (got {self.grade_pct:g}); "
                         "grades are in percent (rise per 100 m of run), not per mille or degrees")
        if self.tx_mode not in TX_MODES:
            found.append(f"tx_mode must be {_one_of(TX_MODES)} (got {self.tx_mode!r})")
        if self.log_level.lower() not in LOG_LEVELS:
            found.append(f"log_level must be {_one_of(LOG_LEVELS)} (got {self.log_level!r})")
        return found + self._lever_problems(period)

    def _lever_problems(self, period: float | None) -> list[str]:
        """The levers of ecu_sim.runtime.tuning, each checked on its own."""
        found = []
        if not (math.isfinite(self.timer_slack_us) and self.timer_slack_us > 0):
            found.append(f"timer_slack_us must be > 0 (got {self.timer_slack_us}); Linux's default is 50")
        longest = 0.1 * (period or 0.1) * 1e6
        if not (math.isfinite(self.spin_us) and 0 <= self.spin_us <= longest):
            found.append(f"spin_us must be 0 (off) to {longest:g}, a tenth of the period "
                         f"(got {self.spin_us:g}); every microsecond of it is CPU time each tick")
        if self.gc not in GC_MODES:
            found.append(f"gc must be {_one_of(GC_MODES)} (got {self.gc!r})")
        if self.cpu_affinity is not None:
            try:
                parse_cpus(self.cpu_affinity)
            except ValueError as exc:
                found.append(f"cpu_affinity is not a list of cores: {exc}")
        low, high = PRIORITY_RANGE
        if self.realtime_priority != 0 and not low <= self.realtime_priority <= high:
            found.append(f"realtime_priority must be 0 (normal scheduling) or {low}..{high} for "
                         f"SCHED_FIFO (got {self.realtime_priority})")
        return found


def _one_of(words: tuple[str, ...]) -> str:
    return f"{', '.join(words[:-1])} or {words[-1]}"


@dataclass(frozen=True)
class VehicleSettings:
    """Which truck the ECU simulates, and how it meets a road of heights (every route of
    ``class6``; elevations, GPX and appendix D for ``testbed``).

    ``testbed`` is the original model with its ``[truck]`` parameters; ``class6`` the GEM-style
    vocational truck (docs/vehicle.md), whose mass is its test mass plus ``payload_kg``.
    """

    preset: str = "testbed"
    payload_kg: float = 0.0
    #: front to rear axle: the slope the truck feels is the height difference over this length
    wheelbase_m: float = 5.0
    #: centred moving average over elevation routes (CSV elevations, GPX); 0 = none
    smoothing_m: float = 30.0
    #: at the end of the route: loop (start again) or extend (continue level)
    route_end: str = "loop"

    def problems(self) -> list[str]:
        found = []
        if self.preset not in PRESETS:
            found.append(f"preset must be {_one_of(PRESETS)} (got {self.preset!r})")
        if self.route_end not in ROUTE_ENDS:
            found.append(f"route_end must be {_one_of(ROUTE_ENDS)} (got {self.route_end!r})")
        if not (math.isfinite(self.payload_kg) and self.payload_kg >= 0.0):
            found.append(f"payload_kg must be >= 0 (got {self.payload_kg})")
        if not (math.isfinite(self.wheelbase_m) and 1.0 <= self.wheelbase_m <= 20.0):
            found.append(f"wheelbase_m must be within 1..20 m (got {self.wheelbase_m})")
        if not (math.isfinite(self.smoothing_m) and self.smoothing_m >= 0.0):
            found.append(f"smoothing_m must be >= 0 (got {self.smoothing_m})")
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


@dataclass(frozen=True)
class RecordSettings:
    """``--record``: every frame received and sent, for analysis and for ``ecu-sim replay``."""

    file: str | None = None
    #: start a new file when the current one reaches this size; 0 = one file
    max_bytes: int = 0

    def problems(self) -> list[str]:
        found = []
        if self.file is not None and not self.file.lower().endswith((*RECORD_FORMATS, MCAP_FORMAT)):
            found.append(f"file must end in .log, .asc, .blf or .mcap, the formats that replay reads "
                         f"back (got {self.file!r})")
        if self.file is not None and self.file.lower().endswith(MCAP_FORMAT) and self.max_bytes:
            found.append("max_bytes cannot split an .mcap recording: one MCAP file holds the run and "
                         "its tick journal; record to .log/.asc/.blf to rotate")
        if self.max_bytes < 0:
            found.append(f"max_bytes must be >= 0 (got {self.max_bytes})")
        elif self.max_bytes and self.file is None:
            found.append(f"max_bytes ({self.max_bytes}) limits a recording, but none is made: add "
                         f"--record FILE ([record] file)")
        return found


@dataclass(frozen=True)
class StreamSettings:
    """``--stream``: each tick as JSON to a live viewer (PlotJuggler's UDP server)."""

    #: ``udp://HOST:PORT``; None: no stream
    target: str | None = None

    def problems(self) -> list[str]:
        if self.target is not None and not self.target.startswith("udp://"):
            return [f"target must be udp://HOST:PORT (got {self.target!r})"]
        return []


@dataclass(frozen=True)
class DriverSettings:
    """``ecu-sim driver``: where the driver's controls come from and how they are read."""

    #: an input device (/dev/input/eventN); None: the keyboard in the terminal
    device: str | None = None
    #: evdev names of the pedal's and the brake's absolute axes, and of the cruise buttons
    axis: str = "ABS_GAS"
    brake_axis: str | None = None
    resume_key: str | None = None
    cancel_key: str | None = None
    #: raw axis values of the released and the fully pressed pedal (default: the device's range)
    axis_released: int | None = None
    axis_pressed: int | None = None
    brake_released: int | None = None
    brake_pressed: int | None = None
    #: the J1939 source address of the driver's frames (default: the primary cab controller)
    driver_source: int = 0x31
    #: how far one arrow key moves the keyboard pedal
    step_pct: float = 5.0

    def problems(self) -> list[str]:
        found = []
        if not (math.isfinite(self.step_pct) and 0 < self.step_pct <= 100):
            found.append(f"step_pct must be within 0..100 % and above 0 (got {self.step_pct})")
        if not 0 <= self.driver_source <= 253:
            found.append(f"driver_source must be a J1939 source address 0..253 (got {self.driver_source})")
        return found


#: ``[ccm] command``: how the CCM commands the truck, the pedal (APP and EBC1) or TSC1 and XBR
CCM_COMMANDS = ("app", "tsc1")


@dataclass(frozen=True)
class CcmSettings:
    """How the cruise control module commands the truck (ecu_sim.nodes.commands)."""

    #: app: the accelerator pedal (EEC2) and the brake pedal (EBC1); tsc1: TSC1 to the engine and
    #: XBR to the brakes, as a production longitudinal controller does
    command: str = "app"

    def problems(self) -> list[str]:
        if self.command not in CCM_COMMANDS:
            return [f"command must be {_one_of(CCM_COMMANDS)} (got {self.command!r}): app presses the "
                    "pedals, tsc1 sends TSC1 to the engine and XBR to the brakes"]
        return []


@dataclass(frozen=True)
class Settings:
    profile: ProfileSettings = field(default_factory=ProfileSettings)
    truck: TruckParams = field(default_factory=TruckParams)
    vehicle: VehicleSettings = field(default_factory=VehicleSettings)
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    run: RunSettings = field(default_factory=RunSettings)
    faults: FaultSettings = field(default_factory=FaultSettings)
    record: RecordSettings = field(default_factory=RecordSettings)
    stream: StreamSettings = field(default_factory=StreamSettings)
    driver: DriverSettings = field(default_factory=DriverSettings)
    j1939: J1939Settings = field(default_factory=J1939Settings)
    ccm: CcmSettings = field(default_factory=CcmSettings)
    fms: FmsSettings = field(default_factory=FmsSettings)
    diagnostics: DiagnosticsSettings = field(default_factory=DiagnosticsSettings)
    controls: ControlSettings = field(default_factory=ControlSettings)
    calibration: CalibrationSettings = field(default_factory=CalibrationSettings)
    #: the [bus] section, passed to python-can (interface, channel, bitrate, backend keywords)
    bus: Mapping[str, str] = field(default_factory=dict)
    #: ``section.key`` -> where the value was given, e.g. ``[run] period_s in /etc/ecu-sim.ini`` or
    #: ``--period on the command line``, so checks made later can name it; defaults are absent
    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def ahead(self) -> Ahead:
        """The controls this run writes ahead, with its period and duration, for the desk."""
        return Ahead(self.controls.apply, self.run.resolved_period_s, self.run.duration_s,
                     self.origins.get("controls.apply", "[controls] apply"))


#: INI section -> dataclass; the [bus] section is free-form and goes to python-can.
SECTIONS: dict[str, type[Any]] = {
    "profile": ProfileSettings,
    "truck": TruckParams,
    "vehicle": VehicleSettings,
    "controller": ControllerSettings,
    "run": RunSettings,
    "faults": FaultSettings,
    "record": RecordSettings,
    "stream": StreamSettings,
    "driver": DriverSettings,
    "j1939": J1939Settings,
    "ccm": CcmSettings,
    "fms": FmsSettings,
    "diagnostics": DiagnosticsSettings,
    "controls": ControlSettings,
    "calibration": CalibrationSettings,
}
BUS_SECTION = "bus"


def locate(problem: str, section: str, origins: Mapping[str, str]) -> str:
    """A problem sentence from ``problems()`` with the origin of the key it starts with, if given."""
    key = problem.split(" ", 1)[0]
    origin = origins.get(f"{section}.{key}")
    return f"{problem} ({origin})" if origin else problem
