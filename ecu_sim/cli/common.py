"""Options every node command shares: configuration, message profile, schedule, logging."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from ecu_sim.cruise.modes import CONTROLLER_MODES
from ecu_sim.errors import ConfigError
from ecu_sim.runtime.tuning import GC_MODES
from ecu_sim.settings import load as config
from ecu_sim.settings.model import CCM_COMMANDS, LOG_LEVELS, NETWORKS, TX_MODES, Settings
from ecu_sim.settings.sources import add_option
from ecu_sim.settings.values import source_address, split_list
from ecu_sim.vehicle.drive import PRESETS
from ecu_sim.vehicle.road import ROUTE_ENDS

if TYPE_CHECKING:
    from ecu_sim.runs.attacked import AttackSetup
    from ecu_sim.runs.realtime import Page


def add_common(parser: argparse.ArgumentParser, sources: tuple[str, ...] = ("app", "speed"),
               tx_mode: bool = True,
               duration_default: str = "run until SIGINT/SIGTERM") -> None:
    """The shared options; ``sources`` are the inputs the command's nodes filter by source address
    (the ECU: app, the CCM: speed, a simulation both), ``tx_mode`` only for a real bus.

    An option a command lacks still works as a configuration-file key (e.g. ``[run] tx_mode``).
    """
    parser.add_argument("--config", metavar="FILE",
                        help="INI file with [bus] [profile] [truck] [controller] [run] sections")
    group = parser.add_argument_group("message profile")
    add_option(group, "--profile", key="profile.name", metavar="NAME",
               help="built-in message set: amp (testbed bytes, default) or j1939 (SAE J1939-71)")
    add_option(group, "--dbc", key="profile.dbc", metavar="PATH",
               help="your own DBC instead of a built-in profile")
    add_option(group, "--speed-signal", key="profile.speed_signal", metavar="MESSAGE.SIGNAL",
               help="wheel-based speed signal (default: the signal with SPN 84)")
    add_option(group, "--app-signal", key="profile.app_signal", metavar="MESSAGE.SIGNAL",
               help="accelerator pedal signal (default: the signal with SPN 91)")
    if "app" in sources:
        add_option(group, "--app-source", key="profile.app_source", type=source_address, metavar="SA",
                   help="accept APP only from this J1939 source address (default: any)")
    if "speed" in sources:
        add_option(group, "--speed-source", key="profile.speed_source", type=source_address,
                   metavar="SA", help="accept speed only from this J1939 source address (default: any)")
    run = parser.add_argument_group("run")
    add_option(run, "--duration", key="run.duration_s", type=float, metavar="S",
               help=f"stop after S seconds (default: {duration_default})")
    add_option(run, "--period", key="run.period_s", type=float, metavar="S",
               help="loop period in seconds (default: the DBC's GenMsgCycleTime of the speed "
                    "message, else 0.1, i.e. 10 Hz)")
    if tx_mode:
        add_option(run, "--tx-mode", key="run.tx_mode", choices=TX_MODES,
                   help="who times the transmissions: auto (default) = the kernel's broadcast "
                        "manager on SocketCAN, this process elsewhere")
    add_option(run, "--log-level", key="run.log_level", choices=LOG_LEVELS,
               help="default info: one status line a second")
    add_j1939_options(parser)


def add_j1939_options(parser: argparse.ArgumentParser) -> None:
    """The node's J1939 network membership; the rest of it is the ``[j1939]`` section."""
    group = parser.add_argument_group("J1939 network")
    add_option(group, "--address-claim", key="j1939.address_claim", action=argparse.BooleanOptionalAction,
               help="claim the address (J1939-81) and broadcast DM1 (default: on, except with the "
                    "amp profile, whose testbed bus carries only its two frames)")
    add_option(group, "--address", key="j1939.address", type=source_address, metavar="SA",
               help="this node's preferred address (default: the DBC's NmStationAddress)")


def add_ecu_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("vehicle")
    add_option(group, "--initial-speed", key="run.initial_speed_kph", type=float, metavar="KPH",
               help="speed at start (default 80 km/h)")
    add_option(group, "--vehicle", key="vehicle.preset", choices=PRESETS,
               help="testbed (default: the original model) or class6 (engine, 6-speed automatic, "
                    "brakes; docs/vehicle.md)")
    add_option(group, "--payload", key="vehicle.payload_kg", type=float, metavar="KG",
               help="class6: payload on top of the test mass (default 0)")
    add_option(group, "--network", key="j1939.network", choices=NETWORKS,
               help="single (default): the ECU is one J1939 node; powertrain (class6, j1939 "
                    "profile): engine 0x00, transmission 0x03, brakes 0x0B and retarder 0x0F, each "
                    "its own node, at a 10 ms tick, taking TSC1 and XBR (docs/j1939.md)")
    add_option(group, "--restbus", key="j1939.restbus", action="append", metavar="FILE.dbc",
               help="with --network powertrain: every node of this DBC that ecu-sim does not host "
                    "sends its messages at their cycle times, from its own address (repeatable; "
                    "docs/whole-truck.md)")
    add_option(group, "--fms", key="fms.enabled", action=argparse.BooleanOptionalAction,
               help="with --network powertrain: the FMS-Standard messages from the truck's state "
                    "(distance, fuel, hours, level, coolant, weights, TCO1; docs/whole-truck.md)")
    add_option(group, "--fms-state", key="fms.state_file", metavar="FILE",
               help="--fms: the totals persist in FILE between runs (written atomically)")
    add_option(group, "--control", key="controls.apply", action="append", metavar="SPEC",
               help="with --network powertrain: a control of the node's page at a time, e.g. "
                    "stop:TCO1@30, send:TCO1@40, cycle:TCO1=200, free:AMB.AmbientAirTemperature, "
                    "signal:TCO1.Driver1WorkingState=2@10-20, dtc:TACHOGRAPH=1624:2@5 "
                    "(repeatable; docs/whole-truck.md)")
    add_option(group, "--wheelbase", key="vehicle.wheelbase_m", type=float, metavar="M",
               help="front to rear axle, over which the slope of a road is felt: elevations, GPX "
                    "and appendix-d, every route for class6 (default 5 m)")
    add_option(group, "--route-end", key="vehicle.route_end", choices=ROUTE_ENDS,
               help="on a road (as for --wheelbase): at the route's end loop (default) or extend "
                    "(continue level)")
    add_option(group, "--smoothing", key="vehicle.smoothing_m", type=float, metavar="M",
               help="moving average over elevation routes (default 30 m, 0 = none)")
    grade = group.add_mutually_exclusive_group()
    add_option(grade, "--route", "--grade-file", key="run.grade_file", metavar="NAME|FILE",
               help="built-in route (testbed, appendix-d) or a file: CSV distance_m,grade_pct or "
                    "distance_m,elevation_m, or GPX; loops at the last distance")
    add_option(grade, "--grade", key="run.grade_pct", type=float, metavar="PCT",
               help="constant grade in percent, 0 for a flat road (default: the testbed route)")


def add_ccm_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("cruise control")
    add_option(group, "--vehicle", key="vehicle.preset", choices=PRESETS,
               help="the truck the ECU simulates: with class6 the CCM also reads ETC2 (holds its "
                    "integral during shifts) and sends EBC1 (brakes on descents) when the DBC has them")
    add_option(group, "--set-speed", key="run.set_speed_kph", type=float, metavar="KPH",
               help="cruise set speed (default 90 km/h)")
    add_gains(group)
    add_option(group, "--route", key="run.grade_file", metavar="NAME|FILE",
               help="--controller predictive: the route ahead, the one the ECU drives (built-in "
                    "testbed or appendix-d, CSV or GPX; default: the testbed's)")
    add_option(group, "--payload", key="vehicle.payload_kg", type=float, metavar="KG",
               help="--controller predictive with class6: the payload, which the prediction "
                    "weighs (default 0)")


def add_gains(group: argparse._ActionsContainer) -> None:
    """``--controller``, and ``--kp`` and ``--ki``, the PI controller's gains (the predictive
    controller's too: it holds the set speed with them)."""
    add_option(group, "--controller", key="controller.mode", choices=CONTROLLER_MODES,
               help="pi (default) holds the set speed; predictive previews the route (--route) and "
                    "coasts before crests and dips within a band of the set speed, in neutral where "
                    "it can ask the transmission (TC1), and holds a little above it ahead of climbs "
                    "([controller] under_kph, over_kph, preview_m, eco_roll, anticipate_kph; "
                    "docs/eco-cruise.md)")
    add_option(group, "--kp", key="controller.kp", type=float, metavar="GAIN",
               help="proportional gain, %% APP per km/h")
    add_option(group, "--ki", key="controller.ki", type=float, metavar="GAIN",
               help="integral gain, %% APP per km/h and second")
    add_option(group, "--command", key="ccm.command", choices=CCM_COMMANDS,
               help="how the CCM commands the truck: app (default) presses the accelerator (EEC2) "
                    "and the brake pedal (EBC1); tsc1 sends TSC1 torque control to the engine and "
                    "XBR to the brakes, as an adaptive cruise does (j1939 profile; docs/j1939.md)")


def settings(args: argparse.Namespace) -> Settings:
    """Load the settings and set up logging, which depends on them."""
    loaded = config.load(args)
    from ecu_sim.service.logs import configure_logging  # imported late: only node commands log this way

    configure_logging(loaded.run.log_level)
    logging.getLogger("ecu_sim").debug("settings: %s", loaded)
    return loaded


def web_page(settings: Settings) -> Page | None:
    """``--web``'s page, imported only when asked for, so a node without it never loads the web."""
    if settings.run.web is None:
        return None
    from ecu_sim.web import wiring

    return wiring


def timeout_options(parser: argparse.ArgumentParser, role: str) -> None:
    """``--app-timeout`` for the ECU, ``--speed-timeout`` for the CCM."""
    add_option(parser, f"--{role}-timeout", key=f"run.{role}_timeout_s", type=float, metavar="S",
               help=f"{'APP' if role == 'app' else 'speed'} older than this counts as missing "
                    "(default: three periods)")


def add_fault_and_record_options(parser: argparse.ArgumentParser) -> None:
    """``--fault``, ``--scenario``, ``--fault-seed``, ``--record``, ``--record-max-bytes``: ``run`` and
    ``ccm`` only, the commands on a real bus."""
    faults = parser.add_argument_group(
        "fault injection", "faults in what this node sends, KIND[=VALUE][@FROM[-TO|+DURATION]] with "
        "KIND drop, delay, freeze, error, na, offset, scale or silent; times in seconds")
    add_option(faults, "--fault", key="faults.inject", action="append", metavar="SPEC", type=_fault_text,
               help="e.g. drop=0.1, silent@60+5, delay=0.3@10-20, offset=-3@30-40 (repeatable)")
    add_option(faults, "--scenario", key="faults.scenario", metavar="FILE",
               help="faults from a file: one SPEC per line, # comments, 'seed = N'")
    add_option(faults, "--fault-seed", key="faults.seed", type=int, metavar="N",
               help="seed of random faults (default: the scenario's, else 0): same seed, same run")
    record = parser.add_argument_group("recording")
    add_option(record, "--record", key="record.file", metavar="FILE",
               help="write every frame received and sent to FILE (.log candump, .asc, .blf) and "
                    "FILE.ticks, or to FILE.mcap with decoded signals and the journal inside, "
                    "for analysis and `ecu-sim replay FILE`")
    add_option(record, "--record-max-bytes", key="record.max_bytes", type=int, metavar="N",
               help="start a new file when the recording reaches N bytes (default: one file)")


def add_attack_options(parser: argparse.ArgumentParser) -> None:
    """``--attack``, ``--attack-seed``, ``--capture``: the runs in virtual time, simulate and cosim."""
    attack = parser.add_argument_group("attacks (ecu-sim attack --list)")
    attack.add_argument("--attack", action="append", default=[], metavar="SPEC",
                        help="an attacker on the bus, e.g. tsc1:target=0x00,speed=2000@30+10 (repeatable)")
    attack.add_argument("--attack-seed", type=int, default=0, metavar="N",
                        help="the seed of the random attacks (fuzz)")
    attack.add_argument("--capture", metavar="FILE.log",
                        help="write every frame of the bus, labelled by attack (FILE and FILE.labels), "
                             "for `ecu-sim dataset`")


def add_diag_script_options(parser: argparse.ArgumentParser) -> None:
    """``--diag-script``, ``--diag-answers``: a scripted tester on the bus of a run in virtual time."""
    group = parser.add_argument_group("a scripted diagnostic session (docs/diagnostics.md)")
    add_option(group, "--diag-script", key="diagnostics.script", metavar="FILE",
               help="a tester on the bus sends the UDS steps of FILE at their times, one line each: "
                    "TIME NODE STEP [ARGUMENTS], e.g. '1.0 0x00 read F190'; its frames are inputs "
                    "in --record's recording")
    add_option(group, "--diag-answers", key="diagnostics.answers", metavar="FILE.csv",
               help="write each request of the script and its answer to FILE.csv "
                    "(line,step,sent_s,request,answer_s,answer)")


def attack_setup(args: argparse.Namespace, mode: str) -> AttackSetup | None:
    """The attacks of ``add_attack_options``, None without any; ConfigError for a capture alone."""
    if args.capture is not None and not args.attack:
        raise ConfigError("--capture labels the frames of an attacked run: give --attack SPEC too")
    from ecu_sim.runs.attacked import AttackSetup

    return None if not args.attack else AttackSetup(tuple(args.attack), args.attack_seed, args.capture,
                                                    mode=mode)


def add_realtime_options(parser: argparse.ArgumentParser) -> None:
    """How the operating system treats the loop (``[run]`` keys; docs/performance.md measures them)."""
    group = parser.add_argument_group("real-time scheduling (opt-in; see docs/performance.md)")
    add_option(group, "--cpu-affinity", key="run.cpu_affinity", metavar="CORES",
               help="run on these cores only, e.g. 1 or 0,1 or 0-1")
    add_option(group, "--realtime-priority", key="run.realtime_priority", type=int, metavar="N",
               help="SCHED_FIFO at priority 1..99 (needs CAP_SYS_NICE; a warning without it)")
    add_option(group, "--lock-memory", key="run.lock_memory", action=argparse.BooleanOptionalAction,
               help="mlockall: no page of the process is paged out (needs LimitMEMLOCK)")
    add_option(group, "--gc", key="run.gc", choices=GC_MODES,
               help="default: Python's automatic collection; between-ticks: freeze the start-up's "
                    "heap and collect right after each tick's send")
    add_option(group, "--drain-at-deadline", key="run.drain_at_deadline",
               action=argparse.BooleanOptionalAction,
               help="take frames that arrived in the last 1 %% of the period right after the "
                    "deadline (default), or leave them to the next tick so they never delay a send")
    add_option(group, "--spin-us", key="run.spin_us", type=float, metavar="US",
               help="wake at most US microseconds before each deadline, take the period's frames "
                    "and read the clock until the deadline, so neither the wake-up nor decoding "
                    "delays the send; how early is learned (CPU time every tick; default 1000; "
                    "0: wake at the deadline)")
    add_option(group, "--timer-slack-us", key="run.timer_slack_us", type=float, metavar="US",
               help="how late Linux may wake the loop (default 1; Linux's own default is 50)")
    # the benchmark's instrument (bench/): where each tick's time goes, written to FILE on exit
    parser.add_argument("--tick-probe", metavar="FILE", help=argparse.SUPPRESS)


def add_web_option(parser: argparse.ArgumentParser) -> None:
    """``--web HOST:PORT``: the node's page and HTTP API (the ``web`` extra)."""
    add_option(parser, "--web", key="run.web", metavar="HOST:PORT",
               help="serve the node's page (live plots, status, controls) and its HTTP API there, "
                    "beside the loop; a port alone binds 127.0.0.1; on any other address the "
                    "controls need the token the node logs at its start (docs/web.md)")


def add_stream_option(parser: argparse.ArgumentParser) -> None:
    """``--stream udp://HOST:PORT``: every tick as a JSON datagram to a live viewer."""
    add_option(parser, "--stream", key="stream.target", metavar="udp://HOST:PORT",
               help="send every tick (decoded signals by node, message, PGN and source address, "
                    "model state, lateness, counters) as one JSON datagram, e.g. to PlotJuggler's "
                    "UDP server; never blocks the loop")


def _fault_text(text: str) -> str:
    """An empty ``--fault`` (a shell variable that was not set) is a mistake, not "no fault"."""
    if not split_list(text):
        raise argparse.ArgumentTypeError("empty; give a fault such as drop=0.1 or silent@60+5, or "
                                         "leave the option out")
    return text
