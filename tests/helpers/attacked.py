"""`ecu-sim simulate` of the class6 truck's powertrain network under attack, and its labelled capture."""

from __future__ import annotations

import csv
from pathlib import Path

import can

from ecu_sim.attack.capture import read_labels
from tests.conftest import Cli

POWERTRAIN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--no-progress")


def simulate(cli_main: Cli, folder: Path, *attacks: str, duration: str = "8", seed: str = "0",
             name: str = "run") -> tuple[Path, list[dict[str, str]]]:
    """The capture of an attacked run and its trace's rows."""
    capture, trace = folder / f"{name}.log", folder / f"{name}.csv"
    args = [arg for attack in attacks for arg in ("--attack", attack)]
    result = cli_main("simulate", *POWERTRAIN, "--duration", duration, *args, "--attack-seed", seed,
                      "--capture", str(capture), "--out", str(trace))
    assert result.status == 0, result.err
    with trace.open(encoding="ascii") as handle:
        return capture, list(csv.DictReader(handle))


def labelled(capture: Path) -> list[tuple[can.Message, int]]:
    """Each frame of a labelled capture with its label."""
    _, labels = read_labels(str(capture))
    frames = list(can.CanutilsLogReader(str(capture)))
    assert len(frames) == len(labels)
    return list(zip(frames, labels, strict=True))


#: (seconds after the log's first frame, identifier): a recording with frames in and out of the window
RECORDED = [(0.0, 0x18FF0001), (0.005, 0x18FF0002), (0.5, 0x18FF0003), (0.52, 0x18FF0004),
            (1.0, 0x18FF0005), (1.7, 0x18FF0006)]
STARTED = 1_700_000_000.0


def record(path: Path) -> Path:
    """A log of RECORDED written by python-can's writer for the file's suffix."""
    with can.Logger(str(path)) as log:
        for n, (offset, ident) in enumerate(RECORDED):
            log.on_message_received(can.Message(timestamp=STARTED + offset, arbitration_id=ident,
                                                data=bytes([n] * 8), is_extended_id=True, channel=0))
    return path
