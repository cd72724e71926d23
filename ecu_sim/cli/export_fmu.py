"""Export the truck model and route as an FMI 2.0 co-simulation FMU (needs the 'fmi' extra)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fmu", metavar="FILE.fmu")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
