"""Settings made whole against the files they name (the DBC, the route), before any bus is opened.

Some settings only make sense against the message profile: the loop period defaults to the DBC's
cycle time of the speed message, speeds must lie within the speed signal's DBC range, and a
source-address filter needs a J1939 parameter group. The DBC is parsed here once and handed on
with the settings, so a run neither parses it twice nor starts with settings it cannot keep.
"""

from __future__ import annotations

import dataclasses

from ecu_sim.codec.profile import DEFAULT_PERIOD_S, Profile
from ecu_sim.codec.restbus_dbc import load_restbus
from ecu_sim.codec.role import RoleCodec
from ecu_sim.errors import ConfigError
from ecu_sim.j1939.ids import format_id
from ecu_sim.nodes.calibrated import given_images
from ecu_sim.nodes.commands import COMMAND_PERIOD_S
from ecu_sim.powertrain import members
from ecu_sim.powertrain.fms import load_totals
from ecu_sim.powertrain.restbus import restbus_files
from ecu_sim.runs import routes
from ecu_sim.settings.model import POWERTRAIN, Settings, locate
from ecu_sim.vehicle.road import Road
from ecu_sim.vehicle.route import GradeSchedule


def prepare(settings: Settings, period_of: str = "speed") -> tuple[Settings, Profile]:
    """The settings with ``run.period_s`` filled in, and their profile; ConfigError names each mistake.

    ``period_of`` is the role whose message's cycle time is the default period: the speed for the
    ECU and the CCM, APP for the driver, whose pedal frames keep the DBC's rate; ``commands`` for
    the CCM is the speed too, unless it sends TSC1 and XBR (:func:`command_timing`).
    """
    p = settings.profile
    profile = Profile.load(p.name, p.dbc, speed_signal=p.speed_signal, app_signal=p.app_signal)
    if settings.j1939.network == POWERTRAIN:
        settings = powertrain_settings(settings, profile)
    if settings.j1939.restbus or settings.fms.enabled:
        _check_restbus(settings)
    if period_of == "commands":
        settings = command_timing(settings, profile)
    if settings.run.period_s is None:
        codec = profile.app if period_of == "app" else profile.speed
        cycle_ms = codec.message.cycle_time
        period = cycle_ms / 1000.0 if cycle_ms else profile.period_s
        settings = dataclasses.replace(
            settings, run=dataclasses.replace(settings.run, period_s=period),
            origins={**settings.origins, "run.period_s": _period_origin(profile, codec)})
    # Again with the period now known: an input timeout must be at least one period of it.
    problems = settings.run.problems()
    if problems:
        raise ConfigError("; ".join(locate(problem, "run", settings.origins) for problem in problems))
    _check_against_profile(settings, profile)
    given_images(settings)  # each [calibration] file read and checked before a bus opens or a file is made
    return settings, profile


def _check_restbus(settings: Settings) -> None:
    """Each ``--restbus`` file (and ``--fms``'s own) read and checked now, so a bad one stops the run
    before its bus opens; the FMS state file too."""
    flag = "--restbus" if settings.j1939.restbus else "--fms"
    if settings.j1939.network != POWERTRAIN:
        raise ConfigError(f"{flag} needs --network powertrain (its nodes are nodes of the powertrain "
                          f"network, at its 10 ms tick); add it, or drop {flag}")
    for path in restbus_files(settings):
        load_restbus(path)
    load_totals(settings.fms.state_file)


def powertrain_settings(settings: Settings, profile: Profile) -> Settings:
    """``--network powertrain`` checked against the vehicle and the DBC, with its base tick (10 ms
    unless ``--period`` says otherwise) and the APP timeout of the single node (three of the
    speed message's cycles), since APP still comes at the CCM's rate, not the base tick's."""
    origin = settings.origins.get("j1939.network", "given")
    if settings.vehicle.preset != "class6":
        raise ConfigError(
            f"--network powertrain ({origin}) hosts the class6 truck's engine, transmission, brakes "
            f"and retarder as J1939 nodes, so it needs --vehicle class6 (got {settings.vehicle.preset}) "
            "and --profile j1939; add them, or drop --network powertrain")
    missing = members.missing(profile.database)
    if missing or not profile.speed.is_j1939:
        raise ConfigError(
            f"--network powertrain ({origin}) needs a J1939 DBC with a node for each of the engine, "
            f"transmission, brakes and retarder; {profile.dbc_path} (profile {profile.name}) has none "
            f"with NmStationAddress {missing or 'of a J1939 speed message'}: use --profile j1939, or "
            "drop --network powertrain")
    run = settings.run
    origins = dict(settings.origins)
    classic = cycle_s(profile.speed)
    if run.period_s is None:
        run = dataclasses.replace(run, period_s=members.BASE_TICK_S)
        origins["run.period_s"] = f"the 10 ms base tick of --network powertrain ({origin})"
    if run.app_timeout_s is None:
        run = dataclasses.replace(run, app_timeout_s=3 * classic)
        origins["run.app_timeout_s"] = (f"three cycles of {profile.speed.message_name} "
                                        "(--network powertrain)")
    return dataclasses.replace(settings, run=run, origins=origins)


def command_timing(settings: Settings, profile: Profile) -> Settings:
    """A CCM's settings with ``--command tsc1``: J1939-71's XBR rate while active, 20 ms (also
    within TSC1's 10 to 20 ms), unless ``--period`` says otherwise, so the brakes never miss the
    stream; and a speed timeout of three of the speed message's cycles, since the speed still comes
    at its own rate. Other commands keep the settings as they are."""
    if settings.ccm.command != "tsc1":
        return settings
    run, origins = settings.run, dict(settings.origins)
    where = settings.origins.get("ccm.command", "given")
    if run.period_s is None:
        run = dataclasses.replace(run, period_s=COMMAND_PERIOD_S)
        origins["run.period_s"] = f"XBR's 20 ms of --command tsc1 ({where})"
    if run.speed_timeout_s is None:
        run = dataclasses.replace(run, speed_timeout_s=3 * cycle_s(profile.speed))
        origins["run.speed_timeout_s"] = f"three cycles of {profile.speed.message_name} (--command tsc1)"
    return dataclasses.replace(settings, run=run, origins=origins)


def cycle_s(codec: RoleCodec) -> float:
    """The cycle time of ``codec``'s message in seconds, the default period when it has none."""
    cycle_ms = codec.message.cycle_time
    return cycle_ms / 1000.0 if cycle_ms else DEFAULT_PERIOD_S


def load_vehicle_route(settings: Settings) -> GradeSchedule | Road:
    """The ECU's road as its vehicle drives it: the ``class6`` truck always a road of elevations,
    the ``testbed`` truck one only for a route that is a road (elevations, GPX, appendix D), else
    its grade schedule (ecu_sim.runs.routes.is_road says which)."""
    name = settings.run.grade_file
    if settings.vehicle.preset != "testbed" or (name is not None and routes.is_road(name)):
        return routes.load_road(settings)
    return load_route(settings)


def load_ccm_road(settings: Settings) -> Road | None:
    """The road a predictive CCM previews: the route the ECU drives (``--route``, ``--grade``), read
    as a road of heights whatever the truck; None for the PI controller, which needs no road."""
    if settings.controller.predictive is None:
        return None
    return routes.load_road(settings)


def load_route(settings: Settings) -> GradeSchedule:
    """The testbed's grade schedule: its built-in route or a grade CSV, a constant grade, or by default
    the testbed's own route.

    Loaded before the bus is opened, like the DBC, so a bad route file ends the command with its
    line number before anything is on the wire.
    """
    run = settings.run
    if run.grade_file is not None:
        return routes.load_grades(run.grade_file)
    if run.grade_pct is not None:
        return GradeSchedule.constant(run.grade_pct)
    return GradeSchedule.testbed()


def _period_origin(profile: Profile, codec: RoleCodec) -> str:
    cycle_ms = codec.message.cycle_time
    if cycle_ms is not None and cycle_ms > 0:
        return f"GenMsgCycleTime {cycle_ms} ms of {codec.message_name} in {profile.dbc_path}"
    return f"the default, {codec.message_name} in {profile.dbc_path} has no GenMsgCycleTime"


def _check_against_profile(settings: Settings, profile: Profile) -> None:
    """What only the DBC can tell: the speed range and whether a role carries a source address."""
    found: list[str] = []
    origins = settings.origins
    speed = profile.speed
    unit = f" {speed.signal.unit}" if speed.signal.unit else ""
    for key in ("initial_speed_kph", "set_speed_kph"):
        value = getattr(settings.run, key)
        if not speed.minimum <= value <= speed.maximum:
            found.append(
                f"{key} must be within the DBC range of the speed signal "
                f"{speed.message_name}.{speed.signal_name} in {profile.dbc_path}, "
                f"{speed.minimum:g}..{speed.maximum:g}{unit} "
                f"(got {value:g}, {origins.get('run.' + key, 'the default')})")
    for key, codec in (("app_source", profile.app), ("speed_source", profile.speed)):
        if getattr(settings.profile, key) is not None and not codec.is_j1939:
            found.append(
                f"{key} ({origins.get('profile.' + key, 'given')}) filters by J1939 source address, but "
                f"the {key.split('_')[0].replace('app', 'APP')} message {codec.message_name} "
                f"(ID {format_id(codec.frame_id, codec.is_extended_id)}) in {profile.dbc_path} is not "
                "a J1939 parameter group: its identifier carries no source address. Remove "
                f"{key}, or mark the message as a J1939 PG in the DBC "
                '(BA_ "VFrameFormat" ... 3 or BA_ "ProtocolType" "J1939").')
    if found:
        raise ConfigError("; ".join(found))
