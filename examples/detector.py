#!/usr/bin/env python3
"""A baseline intrusion detector for ecu-sim's datasets: shows the data is usable, not a product.

Trained on one dataset's benign frames (``ecu-sim dataset ... --out DIR``), it learns per CAN
identifier the shortest gap between two frames, and which sources send TSC1 and XBR. A frame of
another dataset is flagged when

- its identifier was never seen in training (fuzzing, a new sender's spoof, a flood of requests
  from a tool that was not there),
- it follows the previous frame of its identifier sooner than half the shortest benign gap
  (injection beside a genuine sender, floods), or
- it is a TSC1 or XBR from a source that never sent one in training (command injection).

The scores are precision and recall per attack kind against the dataset's own labels (the
``Flag`` and ``attack`` columns). Standard library only:

  python3 examples/detector.py train-dataset/ test-dataset/
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

#: TSC1 and XBR: the commands that move the truck
COMMAND_PGNS = {0x0000, 0x0400}
#: a frame this much sooner than the shortest benign gap of its identifier is suspicious
GAP_FACTOR = 0.5


def pgn_and_source(can_id: int) -> tuple[int, int]:
    pf = (can_id >> 16) & 0xFF
    pgn = (can_id >> 8) & (0x3FF00 if pf < 240 else 0x3FFFF)
    return pgn, can_id & 0xFF


def rows(dataset: Path) -> Iterator[dict[str, str]]:
    with open(dataset / "frames.csv", newline="", encoding="ascii") as handle:
        yield from csv.DictReader(handle)


class Detector:
    def __init__(self) -> None:
        self.min_gap: dict[int, float] = {}
        self.commanders: set[int] = set()

    def train(self, dataset: Path) -> None:
        last: dict[tuple[str, int], float] = {}
        for row in rows(dataset):
            if row["Flag"] != "R":
                continue
            ident, t = int(row["CAN ID"], 16), float(row["Timestamp"])
            pgn, source = pgn_and_source(ident)
            if pgn in COMMAND_PGNS:
                self.commanders.add(source)
            previous = last.get((row["run"], ident))
            gap = float("inf") if previous is None else t - previous
            self.min_gap[ident] = min(self.min_gap.get(ident, float("inf")), gap)
            last[(row["run"], ident)] = t

    def flags(self, dataset: Path) -> Iterator[tuple[bool, str]]:
        """(flagged, attack kind or 'benign') per frame."""
        last: dict[tuple[str, int], float] = {}
        for row in rows(dataset):
            ident, t = int(row["CAN ID"], 16), float(row["Timestamp"])
            pgn, source = pgn_and_source(ident)
            previous = last.get((row["run"], ident))
            last[(row["run"], ident)] = t
            known = ident in self.min_gap
            too_soon = known and previous is not None and t - previous < GAP_FACTOR * self.min_gap[ident]
            commander = pgn in COMMAND_PGNS and source not in self.commanders
            yield bool((not known) or too_soon or commander), row["attack"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train", type=Path, help="the dataset to learn benign traffic from")
    parser.add_argument("test", type=Path, help="the dataset to score on")
    args = parser.parse_args()
    detector = Detector()
    detector.train(args.train)
    true_pos: dict[str, int] = defaultdict(int)
    attacks: dict[str, int] = defaultdict(int)
    false_pos = flagged_total = 0
    for flagged, kind in detector.flags(args.test):
        if kind != "benign":
            attacks[kind] += 1
            true_pos[kind] += flagged
        elif flagged:
            false_pos += 1
        flagged_total += flagged
    print("| attack | frames | recall | precision (this kind's hits over them plus all false alarms) |")
    print("|---|---|---|---|")
    for kind in sorted(attacks):
        hits = true_pos[kind]
        precision = hits / (hits + false_pos) if hits + false_pos else 0.0
        print(f"| {kind} | {attacks[kind]} | {hits / attacks[kind]:.3f} | {precision:.3f} |")
    all_hits = sum(true_pos.values())
    print(f"\nall attacks: recall {all_hits / max(1, sum(attacks.values())):.3f}, precision "
          f"{all_hits / max(1, flagged_total):.3f}; {false_pos} false alarms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
