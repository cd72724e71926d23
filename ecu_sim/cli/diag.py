"""Diagnose a node over UDS: read identifiers and DTCs, clear DTCs, flash a calibration image.

A tester (udsoncan over can-isotp, 29-bit normal fixed addressing; pip install 'ecu-sim[diag]')
at --tester (default 0xF9) asks the node at --target (default 0x00) on the bus the other
commands take. read: the identification without ITEMs, else each ITEM: vin, part, serial,
software, calibration-id, cvn, session, a DID (0xF190) or a calibration parameter by name (with
--node KIND). flash: an image file (S-record or Intel HEX) through the programming session,
security access with the node's key algorithm, erase, download, the dependency check and a
reset; the node then reports the new calibration ID and CVN. Exit status 0: done; 69: no
answer; 75: refused for now (a delay, a moving truck); 76: refused; 77: wrong key.

Examples:
  ecu-sim diag read --iface vcan0
  ecu-sim diag read vin calibration-id --iface vcan0
  ecu-sim diag read road_speed_limit_kph --node engine --iface vcan0
  ecu-sim diag dtcs --iface vcan0
  ecu-sim diag clear --iface vcan0
  ecu-sim diag flash slow.s19 --iface vcan0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ecu_sim.bus import options as bus_options
from ecu_sim.calibration.layout import NODE_KINDS
from ecu_sim.errors import ConfigError
from ecu_sim.settings.sources import add_option
from ecu_sim.settings.values import source_address

if TYPE_CHECKING:
    from ecu_sim.calibration.image import Image
    from ecu_sim.diag.client import WorkshopTester
    from ecu_sim.diag.items import Item
    from ecu_sim.settings.model import Settings

ACTIONS = ("read", "dtcs", "clear", "flash")
#: DTC status bits (ISO 14229-1): test failed, confirmed
_TEST_FAILED, _CONFIRMED = 0x01, 0x08


def add_arguments(parser: argparse.ArgumentParser) -> None:
    bus_options.add_arguments(parser)
    parser.add_argument("action", choices=ACTIONS,
                        help="read: identifiers; dtcs: the DTCs; clear: clear them; flash: an image")
    parser.add_argument("items", nargs="*", metavar="ITEM",
                        help="read: what to read (default: the identification); flash: the image file")
    parser.add_argument("--target", type=source_address, default=0x00, metavar="ADDRESS",
                        help="the node's address (default 0x00)")
    parser.add_argument("--tester", type=source_address, default=0xF9, metavar="ADDRESS",
                        help="the tester's own address (default 0xF9)")
    parser.add_argument("--node", choices=NODE_KINDS,
                        help="the node's kind: read a calibration parameter by name or show a "
                             "DID's value; flash: refuse an image for another kind before sending")
    parser.add_argument("--timeout", type=float, default=2.0, metavar="S",
                        help="how long to wait for each answer (default 2 s)")
    parser.add_argument("--config", metavar="FILE",
                        help="INI file: its [bus] and [diagnostics] key_algorithm, as the node's")
    add_option(parser, "--key-algorithm", key="diagnostics.key_algorithm", metavar="MODULE:FUNCTION",
               help="flash: the node's key algorithm (default: the documented default key)")


def run(args: argparse.Namespace) -> int:
    from ecu_sim.diag import require
    from ecu_sim.settings import load as config
    from ecu_sim.settings.values import bus_value

    require()
    if args.action == "flash" and len(args.items) != 1:
        raise ConfigError("ecu-sim diag flash takes one image file, e.g. `ecu-sim diag flash slow.s19`")
    if args.action in ("dtcs", "clear") and args.items:
        raise ConfigError(f"ecu-sim diag {args.action} takes no ITEM (got {' '.join(args.items)})")
    if not args.timeout > 0:
        raise ConfigError(f"--timeout must be above 0 s (got {args.timeout:g})")
    settings = config.load(args)
    items = _items(args) if args.action == "read" else []
    image = _image(args) if args.action == "flash" else None
    key = _key(settings) if args.action == "flash" else None
    options = bus_options.resolve_bus_options(args, settings.bus, bus_value)
    from ecu_sim.diag.client import WorkshopTester

    with (bus_options.open_bus(options) as bus,
          WorkshopTester(bus, args.target, args.tester, args.timeout) as tester):
        if args.action == "read":
            return _read(tester, items, explicit=bool(args.items))
        if args.action == "dtcs":
            return _dtcs(tester)
        if args.action == "clear":
            tester.clear()
            print(f"0x{args.target:02X}: DTCs cleared")
            return 0
        assert image is not None and key is not None
        return _flash(tester, image, key)


def _items(args: argparse.Namespace) -> list[Item]:
    from ecu_sim.diag.items import IDENTIFICATION, item

    return [item(name, args.node) for name in (args.items or IDENTIFICATION)]


def _image(args: argparse.Namespace) -> Image:
    from ecu_sim.calibration.files import read_image
    from ecu_sim.calibration.layout import CalibrationError

    try:
        return read_image(Path(args.items[0]), args.node)
    except CalibrationError as exc:
        raise ConfigError(str(exc)) from None


def _key(settings: Settings) -> Callable[[bytes, int], bytes]:
    from ecu_sim.diag.flash import load_key

    return load_key(settings.diagnostics.key_algorithm)


def _read(tester: WorkshopTester, items: list[Item], explicit: bool) -> int:
    """Each item; of the whole identification, the ones the node does not have are said so."""
    for entry in items:
        label = f"0x{tester.target:02X} {entry.title} ({entry.did:04X})"
        data = tester.read(entry.did, entry.title) if explicit else tester.read_if_any(entry.did, entry.title)
        print(f"{label}: {'not on this node' if data is None else entry.show(data)}")
    return 0


def _dtcs(tester: WorkshopTester) -> int:
    found = tester.dtcs()
    for dtc, status in found:
        high, low, fmi_byte = dtc >> 16, (dtc >> 8) & 0xFF, dtc & 0xFF
        spn = high | low << 8 | (fmi_byte >> 5) << 16  # J1939-73's format: SPN's low 16 bits LE
        state = ("active" if status & _TEST_FAILED else
                 "previously active" if status & _CONFIRMED else f"status 0x{status:02X}")
        print(f"0x{tester.target:02X} DTC SPN {spn} FMI {fmi_byte & 0x1F} ({dtc:06X}): {state}")
    if not found:
        print(f"0x{tester.target:02X}: no DTCs")
    return 0


def _flash(tester: WorkshopTester, image: Image, key: Callable[[bytes, int], bytes]) -> int:
    from tqdm import tqdm

    from ecu_sim.diag.flash import flash

    print(f"0x{tester.target:02X}: flashing {image.kind} calibration {image.calibration_id!r} "
          f"(CVN 0x{image.cvn:08X}, {len(image.data)} bytes at 0x{image.layout.start:X})")
    with tqdm(total=len(image.data), unit="B", desc=f"0x{tester.target:02X} download", file=sys.stderr,
              disable=None, leave=False) as bar:
        done = flash(tester, image, key, bar.update)
    print(f"0x{tester.target:02X}: {done.size} bytes in {done.blocks} block{'s' * (done.blocks != 1)}; "
          f"after its reset the node runs calibration {done.calibration_id!r} (CVN 0x{done.cvn:08X})")
    return 0
