"""Export the truck model as an FMI 2.0 co-simulation FMU (PythonFMU; the 'fmi' extra).

Inputs app_pct and grade_pct, outputs speed_kph, distance_m and road_grade_pct, and every [truck]
field as a parameter; docs/cosim.md says what the importing host needs.
Example:
  ecu-sim export-fmu truck.fmu
  python3 -c "import fmpy; print(fmpy.simulate_fmu('truck.fmu', stop_time=60)[-1])"
"""

from __future__ import annotations

import argparse
import logging

log = logging.getLogger("ecu_sim")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fmu", metavar="FILE.fmu", help="where to write the FMU")


def run(args: argparse.Namespace) -> int:
    from ecu_sim.fmi.export import export

    path = export(args.fmu)
    print(f"wrote {path}: FMI 2.0 co-simulation, model EcuSimTruck")
    return 0
