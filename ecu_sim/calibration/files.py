"""Calibration images as files: Motorola S-record (.s19, .srec, .mot) and Intel HEX (.hex).

bincopy reads and writes both, so no record format is written by hand here; it is imported only
when a file is read or written, so a run without an image file does not pay for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import AREA_SIZE, AREA_START, CalibrationError

SREC_SUFFIXES: Final = (".s19", ".srec", ".mot")
HEX_SUFFIXES: Final = (".hex", ".ihex")


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in SREC_SUFFIXES:
        return "srec"
    if suffix in HEX_SUFFIXES:
        return "ihex"
    raise CalibrationError(f"{path}: a calibration file ends in .s19/.srec/.mot (S-record) or .hex "
                           f"(Intel HEX), not {suffix or 'nothing'}")


def read_image(path: Path, kind: str | None = None) -> Image:
    """The image in the file at ``path``, checked whole (for ``kind`` if given)."""
    import bincopy

    fmt = _format(path)
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"{path}: cannot read it as a text file ({exc})") from None
    records = bincopy.BinFile()
    try:
        if fmt == "srec":
            records.add_srec(text)
        else:
            records.add_ihex(text)
    except (bincopy.Error, ValueError) as exc:
        raise CalibrationError(f"{path}: not a valid {'S-record' if fmt == 'srec' else 'Intel HEX'} "
                               f"file: {exc}") from None
    end = AREA_START + AREA_SIZE
    if records.minimum_address != AREA_START or records.maximum_address != end:
        raise CalibrationError(f"{path}: a calibration image covers 0x{AREA_START:X}..0x{end:X} "
                               f"(got 0x{records.minimum_address or 0:X}.."
                               f"0x{records.maximum_address or 0:X})")
    data = records.as_binary(minimum_address=AREA_START, maximum_address=end, padding=b"\xff")
    try:
        return Image.parse(data, kind)
    except CalibrationError as exc:
        raise CalibrationError(f"{path}: {exc}") from None


def image_text(image: Image, path: Path) -> str:
    """The file's text for ``image`` in the format ``path``'s suffix names."""
    import bincopy

    fmt = _format(path)
    records = bincopy.BinFile()
    records.add_binary(image.data, address=AREA_START)
    text: str = records.as_srec() if fmt == "srec" else records.as_ihex()
    return text


def write_image(image: Image, path: Path) -> None:
    """Write ``image`` to ``path``; nothing is written when the suffix names no format."""
    text = image_text(image, path)
    path.write_text(text, encoding="ascii")
