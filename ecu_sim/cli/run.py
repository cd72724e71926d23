"""Run the ECU: receive APP, integrate the truck, send wheel-based speed (the default command).

Examples:
  ecu-sim                         # on the default bus (udp_multicast), works anywhere
  ecu-sim --iface vcan0           # on SocketCAN vcan0
  ecu-sim -i pcan -c PCAN_USBBUS1 -b 250000 --profile j1939
"""

from __future__ import annotations

import argparse

from ecu_sim.bus import options as bus_options
from ecu_sim.cli import common
from ecu_sim.nodes.factory import NodeKind
from ecu_sim.runs.realtime import run_realtime


def add_arguments(parser: argparse.ArgumentParser) -> None:
    bus_options.add_arguments(parser)
    common.add_common(parser, sources=("app",))
    common.add_ecu_options(parser)
    common.timeout_options(parser, "app")
    common.add_fault_and_record_options(parser)
    common.add_stream_option(parser)


def run(args: argparse.Namespace) -> int:
    return run_realtime(NodeKind.ECU, args, common.settings(args))
