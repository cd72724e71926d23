"""Stage J1939 attacks on a bus, as a process of their own: TSC1/XBR injection, spoofing, floods.

Each --attack is KIND[:KEY=VALUE,...][@FROM[-TO|+DURATION]] (seconds from the start); the attacks
and their parameters are listed by --list. The attacker refuses a bus that is not virtual (vcan,
udp_multicast, virtual) unless given --allow-real-bus. With --capture it writes every frame it
saw, labelled (FILE and FILE.labels), which `ecu-sim dataset` turns into a dataset.
Examples:
  ecu-sim attack --iface vcan0 --attack tsc1:target=0x00,speed=2000@30+10
  ecu-sim attack --attack request:rate=2000@5+10 --attack claim@20 --duration 30
"""

from __future__ import annotations

import argparse
import logging

from ecu_sim.attack import realtime, safety
from ecu_sim.attack.capture import LabelledCapture
from ecu_sim.attack.spec import ATTACKS, check_windows, parse_attack
from ecu_sim.bus import options as bus_options
from ecu_sim.errors import ConfigError
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.values import bus_value

log = logging.getLogger("ecu_sim")
#: the powertrain's base tick: TSC1's standard 10 ms
DEFAULT_PERIOD_S = 0.01


def add_arguments(parser: argparse.ArgumentParser) -> None:
    bus_options.add_arguments(parser)
    parser.add_argument("--attack", action="append", default=[], metavar="SPEC",
                        help="an attack, e.g. tsc1:target=0x00,speed=2000@30+10 (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the attacks and their parameters")
    parser.add_argument("--duration", type=float, metavar="S",
                        help="stop after S seconds (default: when the last window closes)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the random attacks (fuzz)")
    parser.add_argument("--period", type=float, default=DEFAULT_PERIOD_S, metavar="S",
                        help=f"the attacker's tick (default {DEFAULT_PERIOD_S:g} s)")
    parser.add_argument("--profile", default="j1939", help="the built-in DBC the frames follow")
    parser.add_argument("--dbc", metavar="PATH", help="a DBC of your own instead")
    parser.add_argument("--capture", metavar="FILE.log", help="write the frames seen, labelled")
    parser.add_argument(safety.ALLOW_OPTION, action="store_true",
                        help="attack a bus that is not virtual (a bench you may disturb)")


def run(args: argparse.Namespace) -> int:
    if args.list:
        for kind in ATTACKS:
            keys = ",".join(p.key if p.default is None else f"{p.key}={p.default}" for p in kind.parameters())
            print(f"{kind.name:9} {kind.help}\n          {keys}")
        return 0
    if not args.attack:
        raise ConfigError("ecu-sim attack needs at least one --attack SPEC (see --list)")
    if not 0.001 <= args.period <= 1.0:
        raise ConfigError(f"--period must be within 0.001..1 s (got {args.period:g})")
    attacks = [parse_attack(text) for text in args.attack]
    check_windows(attacks, args.duration)
    options = bus_options.resolve_bus_options(args, {}, bus_value)
    safety.check_bus(options, args.allow_real_bus)
    plan = realtime.plan_for(attacks, args.profile, args.dbc, args.period, args.seed)
    ticks = plan.last_tick if args.duration is None else ticks_in(args.duration, args.period)
    header = {"mode": "real time", "seed": args.seed, "period_s": args.period, "attacks": plan.manifest()}
    with bus_options.open_bus(options) as bus:
        capture = None if args.capture is None else LabelledCapture(args.capture, header)
        try:
            node = realtime.run(bus, plan, ticks, capture)
        finally:
            if capture is not None:
                capture.close()
    log.info("sent %d attack frames in %d ticks", node.sent, node.tick_count)
    return 0
