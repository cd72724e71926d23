"""Run the ECU: receive APP, integrate the truck, send wheel-based speed (the default command).

Examples:
  ecu-sim                         # on the default bus (udp_multicast), works anywhere
  ecu-sim --iface vcan0           # on SocketCAN vcan0
  ecu-sim -i pcan -c PCAN_USBBUS1 -b 250000 --profile j1939
  ecu-sim --plant udp:127.0.0.1:47000   # speed from an external simulator, on the bus
"""

from __future__ import annotations

import argparse

from ecu_sim.bus import options as bus_options
from ecu_sim.cli import common
from ecu_sim.nodes.factory import NodeKind
from ecu_sim.runs.realtime import run_realtime
from ecu_sim.settings.sources import add_option


def add_arguments(parser: argparse.ArgumentParser) -> None:
    bus_options.add_arguments(parser)
    common.add_common(parser, sources=("app",))
    common.add_ecu_options(parser)
    common.timeout_options(parser, "app")
    common.add_fault_and_record_options(parser)
    add_option(parser.add_argument_group("external plant"), "--plant", key="run.plant",
               metavar="udp:HOST:PORT",
               help="step an external truck (a simulator behind the fixed-format co-simulation "
                    "encoding, docs/cosim.md) every tick instead of the built-in model")
    common.add_stream_option(parser)
    common.add_web_option(parser)
    common.add_realtime_options(parser)


def run(args: argparse.Namespace) -> int:
    settings = common.settings(args)
    return run_realtime(NodeKind.ECU, args, settings, page=common.web_page(settings))
