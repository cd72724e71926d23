"""Run the cruise control module: receive speed, run the PI controller, send APP.

Examples:
  ecu-sim ccm --set-speed 90
  ecu-sim ccm --iface vcan0 --set-speed 90 --kp 20 --ki 2
"""

from __future__ import annotations

import argparse

from ecu_sim.bus import options as bus_options
from ecu_sim.cli import common
from ecu_sim.nodes.factory import NodeKind
from ecu_sim.runs.realtime import run_realtime


def add_arguments(parser: argparse.ArgumentParser) -> None:
    bus_options.add_arguments(parser)
    common.add_common(parser, sources=("speed",))
    common.add_ccm_options(parser)
    common.timeout_options(parser, "speed")
    common.add_fault_and_record_options(parser)
    common.add_stream_option(parser)
    common.add_web_option(parser)
    common.add_realtime_options(parser)


def run(args: argparse.Namespace) -> int:
    settings = common.settings(args)
    return run_realtime(NodeKind.CCM, args, settings, page=common.web_page(settings))
