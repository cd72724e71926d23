"""A diagnostic script: one step a line, ``TIME NODE STEP [ARGUMENTS]``, read and checked whole.

A step is sent at ``TIME`` seconds of the run, or as soon as the step before it has its answer,
whichever is later: a step waits for its answer (or its timeout) before the next goes, so a
script reads as the session a person would hold. ``NODE`` is the node's address (``0x00``,
decimal or hex with ``0x``); ``#`` starts a comment. The steps are the table :data:`STEPS`:
a raw request in hex, and the named steps of a reflash (docs/diagnostics.md has the format and
an example). Everything is checked before the run starts, the image files read too, and the first
problem is one line naming the file and the line: a script that is not right never half runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ecu_sim.calibration.files import read_image
from ecu_sim.calibration.layout import AREA_START, CalibrationError
from ecu_sim.errors import ConfigError
from ecu_sim.isotp.frames import MAX_MESSAGE
from ecu_sim.uds.codes import DiagnosticSession

#: what ``session`` takes, and ``reset``: the sub-functions by name
SESSIONS: Final = {session.name.lower(): int(session) for session in DiagnosticSession}
RESETS: Final = {"hard": 0x01, "keyoffon": 0x02, "soft": 0x03}
#: the highest node address a request can go to (0xFE is the null address, 0xFF global)
LAST_ADDRESS: Final = 0xFD
_DID: Final = re.compile(r"[0-9A-Fa-f]{4}")


@dataclass(frozen=True)
class ImageDownload:
    """The image a ``download`` step sends, and where to."""

    path: str
    address: int
    data: bytes


#: a step's arguments as parsed: a raw request's bytes, a sub-function, DIDs, a DID and its
#: bytes, an image, or nothing
Arguments = bytes | int | tuple[int, ...] | tuple[int, bytes] | ImageDownload | None


@dataclass(frozen=True)
class ScriptStep:
    """One line of a script."""

    line: int
    at_s: float
    node: int
    name: str
    arguments: Arguments
    #: the step as written after its time, for the log and the answers' file
    text: str


def _no_arguments(words: list[str], folder: Path) -> Arguments:
    if words:
        raise ValueError(f"takes no arguments (got {' '.join(words)!r})")
    return None


def _hex(words: list[str], what: str) -> bytes:
    text = "".join(words)
    try:
        data = bytes.fromhex(text)
    except ValueError:
        raise ValueError(f"{what} must be hex bytes, e.g. 22 F1 90 (got {' '.join(words)!r})") from None
    if not 0 < len(data) <= MAX_MESSAGE:
        raise ValueError(f"{what} has 1..{MAX_MESSAGE} bytes (got {len(data)})")
    return data


def _did(word: str) -> int:
    if not _DID.fullmatch(word):
        raise ValueError(f"a data identifier is four hex digits, e.g. F190 (got {word!r})")
    return int(word, 16)


def _raw(words: list[str], folder: Path) -> Arguments:
    return _hex(words, "a raw request")


def _named(table: dict[str, int], what: str) -> Callable[[list[str], Path], Arguments]:
    def parse(words: list[str], folder: Path) -> Arguments:
        if len(words) != 1 or words[0].lower() not in table:
            raise ValueError(f"takes one {what}: {', '.join(table)} (got {' '.join(words) or 'none'})")
        return table[words[0].lower()]
    return parse


def _reset(words: list[str], folder: Path) -> Arguments:
    return _named(RESETS, "kind of reset")(words or ["hard"], folder)


def _read(words: list[str], folder: Path) -> Arguments:
    if not words:
        raise ValueError("takes one or more data identifiers, e.g. read F190 F186")
    return tuple(_did(word) for word in words)


def _write(words: list[str], folder: Path) -> Arguments:
    if len(words) < 2:
        raise ValueError("takes a data identifier and its bytes in hex, e.g. write 0100 0000000000005440")
    return _did(words[0]), _hex(words[1:], "the data")


def _download(words: list[str], folder: Path) -> Arguments:
    if len(words) != 1:
        raise ValueError("takes one image file (.s19, .srec, .mot, .hex), e.g. download slow.s19")
    path = Path(words[0]) if Path(words[0]).is_absolute() else folder / words[0]
    try:
        image = read_image(path)
    except CalibrationError as exc:
        raise ValueError(str(exc)) from None
    return ImageDownload(str(path), AREA_START, image.data)


#: the steps a script has: each one's parser of its arguments
STEPS: Final[dict[str, Callable[[list[str], Path], Arguments]]] = {
    "raw": _raw,
    "session": _named(SESSIONS, "session"),
    "unlock": _no_arguments,
    "erase": _no_arguments,
    "download": _download,
    "check": _no_arguments,
    "reset": _reset,
    "read": _read,
    "write": _write,
}


def _time(word: str) -> float:
    try:
        at_s = float(word)
    except ValueError:
        at_s = math.nan
    if not (math.isfinite(at_s) and at_s >= 0.0):
        raise ValueError(f"a step starts with its time in seconds, a number >= 0 (got {word!r})")
    return at_s


def _node(word: str) -> int:
    try:
        node = int(word, 0)
    except ValueError:
        node = -1
    if not 0 <= node <= LAST_ADDRESS:
        raise ValueError(f"the node is its address, 0..0x{LAST_ADDRESS:X}, e.g. 0x00 (got {word!r})")
    return node


def parse_line(number: int, line: str, folder: Path) -> ScriptStep | None:
    """The step on a line (None for a blank or comment line); ValueError saying what is wrong."""
    words = line.split("#", 1)[0].split()
    if not words:
        return None
    if len(words) < 3:
        raise ValueError("expected TIME NODE STEP [ARGUMENTS], e.g. 1.0 0x00 read F190")
    name = words[2].lower()
    parse = STEPS.get(name)
    if parse is None:
        raise ValueError(f"unknown step {words[2]!r}; the steps are {', '.join(STEPS)}")
    try:
        arguments = parse(words[3:], folder)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return ScriptStep(number, _time(words[0]), _node(words[1]), name, arguments, " ".join(words[1:]))


def load_script(path: str, duration_s: float | None = None) -> tuple[ScriptStep, ...]:
    """The steps of the script at ``path``, every one checked; ConfigError naming ``path:line``
    for the first problem (``duration_s``: a step at or after the run's end is one)."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the diagnostic script ({exc})") from None
    steps: list[ScriptStep] = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            step = parse_line(number, line, source.parent)
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: {exc}") from None
        if step is None:
            continue
        if steps and step.at_s < steps[-1].at_s:
            raise ConfigError(f"{path}:{number}: the step at {step.at_s:g} s comes before the one "
                              f"above it at {steps[-1].at_s:g} s; write the steps in the order of time")
        if duration_s is not None and step.at_s >= duration_s:
            raise ConfigError(f"{path}:{number}: the step at {step.at_s:g} s is at or after the run's "
                              f"end ({duration_s:g} s); run longer or move the step")
        steps.append(step)
    if not steps:
        raise ConfigError(f"{path}: the diagnostic script has no step; a line is TIME NODE STEP "
                          "[ARGUMENTS], e.g. 1.0 0x00 read F190")
    return tuple(steps)
