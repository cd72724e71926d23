"""Turn labelled captures into a dataset: a CSV of frames and labels, the candump logs, a manifest.

The CSV has the HCRL Car-Hacking dataset's columns (Timestamp, CAN ID, DLC, DATA[0]..DATA[7],
Flag T/R) plus the attack's kind, its number and the run. Examples:
  ecu-sim simulate --vehicle class6 --profile j1939 --network powertrain --duration 60 \\
      --attack tsc1:speed=2000@10+10 --capture run.log
  ecu-sim dataset run.log --out dataset/
"""

from __future__ import annotations

import argparse
import logging

from ecu_sim.attack import dataset

log = logging.getLogger("ecu_sim")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("captures", nargs="+", metavar="RUN.log",
                        help="labelled captures (simulate --capture, attack --capture)")
    parser.add_argument("--out", required=True, metavar="DIR", help="the dataset's folder")


def run(args: argparse.Namespace) -> int:
    manifest = dataset.write(args.captures, args.out)
    frames = sum(r["frames"] for r in manifest["runs"])
    log.info("wrote %d frames of %d runs into %s", frames, len(manifest["runs"]), args.out)
    return 0
