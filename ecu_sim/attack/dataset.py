"""A dataset from labelled captures: frames with labels in the HCRL Car-Hacking CSV layout, the
candump logs, and a manifest of what ran.

The CSV's columns are the Car-Hacking dataset's (``Timestamp, CAN ID, DLC, DATA[0]..DATA[7],
Flag``, ``T`` injected, ``R`` normal), so a detector written for it reads ours unchanged; three
columns follow that it lacks: the attack's kind (``benign`` for normal frames), its number in the
run and the run. A 29-bit identifier is written with eight hex digits. The candump logs are the
captures as they were, for replay with can-utils or python-can.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections import Counter
from collections.abc import Sequence
from typing import Any

import can

from ecu_sim.attack.capture import SUFFIX, read_labels
from ecu_sim.attack.plan import BENIGN
from ecu_sim.errors import CannotCreateError, ConfigError

COLUMNS = ("Timestamp", "CAN ID", "DLC", *(f"DATA[{i}]" for i in range(8)), "Flag", "attack", "label", "run")
CSV_NAME = "frames.csv"
MANIFEST_NAME = "manifest.json"


def write(captures: Sequence[str], out_dir: str) -> dict[str, Any]:
    """Write the dataset of ``captures`` into ``out_dir``; the manifest it wrote."""
    headers = [_header(path) for path in captures]
    try:
        os.makedirs(out_dir, exist_ok=True)
        runs = []
        with open(os.path.join(out_dir, CSV_NAME), "w", encoding="ascii", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            for number, (path, (header, labels)) in enumerate(zip(captures, headers, strict=True)):
                name = f"run{number:04d}"
                counts = _rows(writer, path, labels, header, name)
                shutil.copyfile(path, os.path.join(out_dir, f"{name}.log"))
                runs.append({"run": name, "capture": os.path.abspath(path), "frames": len(labels),
                             "frames_by_kind": counts, **{k: v for k, v in header.items() if k != "format"}})
        manifest = {"format": "ecu-sim dataset", "layout": "HCRL Car-Hacking CSV plus attack, label, run",
                    "csv": CSV_NAME, "runs": runs}
        with open(os.path.join(out_dir, MANIFEST_NAME), "w", encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=1)
    except OSError as exc:
        raise CannotCreateError(f"cannot write the dataset into {out_dir}: {exc.strerror or exc}") from None
    return manifest


def _header(path: str) -> tuple[dict[str, Any], list[int]]:
    try:
        return read_labels(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not a labelled capture (simulate --capture, attack --capture): "
                          f"{path + SUFFIX}: {getattr(exc, 'strerror', None) or exc}") from None


def _rows(writer: Any, path: str, labels: list[int], header: dict[str, Any], name: str) -> dict[str, int]:
    kinds = {a["label"]: a["kind"] for a in header.get("attacks", [])}
    counts: Counter[str] = Counter()
    try:
        for msg, label in zip(can.CanutilsLogReader(path), labels, strict=True):
            kind = "benign" if label == BENIGN else kinds.get(label, "unknown")
            counts[kind] += 1
            data = [f"{b:02x}" for b in msg.data] + [""] * (8 - len(msg.data))
            ident = f"{msg.arbitration_id:08x}" if msg.is_extended_id else f"{msg.arbitration_id:04x}"
            writer.writerow((f"{msg.timestamp:.6f}", ident, msg.dlc, *data, "R" if label == BENIGN else "T",
                             kind, label, name))
    except ValueError:
        # zip's strict check: a log longer or shorter than its labels is not theirs, whichever ran out
        raise ConfigError(f"{path} has not as many frames as {path + SUFFIX} has labels ({len(labels)}): "
                          "the capture is cut short, runs on, or is not the labels' own") from None
    return dict(sorted(counts.items()))
