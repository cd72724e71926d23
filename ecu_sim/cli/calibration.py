"""Show, export and build a node's calibration image (S-record or Intel HEX).

show: the layout of a node kind's calibration memory, or an image file's values, calibration ID
and CVN. export: the built-in image of a node kind, made from the settings (--config), as a run
would start from it. build: an image from a node kind's built-in one (or --from a file) with
--set NAME=VALUE changes and a calibration ID. A run starts from an image with [calibration] KIND = FILE.

Examples:
  ecu-sim calibration show --node engine
  ecu-sim calibration export --node engine -o engine.s19
  ecu-sim calibration build --node engine --id SLOW-80 --set road_speed_limit_kph=80 -o slow.s19
  ecu-sim calibration show slow.s19
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ecu_sim.calibration.layout import NODE_KINDS

if TYPE_CHECKING:
    from ecu_sim.calibration.image import Image

ACTIONS = ("show", "export", "build")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="show, export or build")
    parser.add_argument("files", nargs="*", metavar="FILE", help="show: an image file")
    parser.add_argument("--node", choices=NODE_KINDS,
                        help="the node kind (show without a file: its layout)")
    parser.add_argument("-o", "--out", metavar="FILE", help="export, build: the image file to write "
                                                            "(.s19/.srec/.mot S-record, .hex Intel HEX)")
    parser.add_argument("--set", dest="changes", action="append", default=[], metavar="NAME=VALUE",
                        help="build: a parameter's new value (repeat for more; inf is a number)")
    parser.add_argument("--id", metavar="TEXT",
                        help="build: the calibration ID (16 ASCII characters at most)")
    parser.add_argument("--from", dest="source", metavar="FILE",
                        help="build: start from this image file instead of the built-in image")
    parser.add_argument("--config", metavar="FILE",
                        help="INI file whose settings the built-in image is made from")


def run(args: argparse.Namespace) -> int:
    from ecu_sim.calibration.layout import CalibrationError
    from ecu_sim.errors import ConfigError

    try:
        if args.action == "show":
            return _show(args)
        return _write(args)
    except CalibrationError as exc:
        raise ConfigError(str(exc)) from None


def _show(args: argparse.Namespace) -> int:
    from ecu_sim.calibration.files import read_image
    from ecu_sim.calibration.show import image_lines, layout_lines
    from ecu_sim.errors import ConfigError

    if len(args.files) > 1:
        raise ConfigError("show takes one image file at most")
    if args.files:
        print("\n".join(image_lines(read_image(Path(args.files[0]), args.node))))
        return 0
    for kind in [args.node] if args.node else NODE_KINDS:
        print("\n".join(layout_lines(kind)))
    return 0


def _write(args: argparse.Namespace) -> int:
    from ecu_sim.calibration.files import image_text, read_image
    from ecu_sim.calibration.show import parse_changes
    from ecu_sim.errors import CannotCreateError, ConfigError

    if args.out is None:
        raise ConfigError(f"{args.action} needs -o FILE (.s19 or .hex)")
    if args.files:
        raise ConfigError(f"{args.action} reads no image file but --from FILE; it writes -o FILE")
    if args.action == "export" and (args.changes or args.id or args.source):
        raise ConfigError("export writes the built-in image as it is: --set, --id and --from are "
                          "for 'ecu-sim calibration build'")
    if args.source is not None:
        image = read_image(Path(args.source), args.node)
    elif args.node is None:
        raise ConfigError(f"say which node's calibration: --node {{{','.join(NODE_KINDS)}}}")
    else:
        image = _builtin(args.node, args.config)
    if args.action == "build":
        image = image.changed(parse_changes(image.layout, args.changes), args.id)
    out = Path(args.out)
    text = image_text(image, out)
    try:
        out.write_text(text, encoding="ascii")
    except OSError as exc:
        raise CannotCreateError(f"cannot write {out}: {exc.strerror}") from None
    print(f"{out}: {image.kind} calibration {image.calibration_id!r}, CVN 0x{image.cvn:08X}")
    return 0


def _builtin(kind: str, config: str | None) -> Image:
    from ecu_sim.nodes.calibrated import builtin_image
    from ecu_sim.settings import load

    settings = load.load(argparse.Namespace(config=config, command="calibration"), environ={})
    return builtin_image(kind, settings)
