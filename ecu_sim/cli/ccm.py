"""Run the cruise control module: receive speed, run the PI controller, send APP.

Examples:
  ecu-sim ccm --set-speed 90
  ecu-sim ccm --iface vcan0 --set-speed 90 --kp 20 --ki 2
"""

from __future__ import annotations

import argparse

from ecu_sim.bus import port as bus
from ecu_sim.cli import common
from ecu_sim.runs import realtime as runner


def add_arguments(parser: argparse.ArgumentParser) -> None:
    bus.add_arguments(parser)
    common.add_common(parser, sources=("speed",))
    common.add_ccm_options(parser)
    common.timeout_options(parser, "speed")
    common.add_fault_and_record_options(parser)


def run(args: argparse.Namespace) -> int:
    return runner.run_realtime("ccm", args, common.settings(args))
