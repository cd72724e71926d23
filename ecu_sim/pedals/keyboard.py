"""The keyboard as pedals, for a laptop without any: arrow keys step the pedal, letters are the rest.

A terminal sends a key as bytes, the arrow keys as escape sequences (``ESC [ A`` in normal mode,
``ESC O A`` in the application cursor mode some terminals switch to), and a read may end in the
middle of one, so the decoder keeps an unfinished sequence for the next read. A terminal tells
presses, not releases: the brake and the buttons count as held for a short while after each
press (``press_reads`` reads), which a held key's auto-repeat extends.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import tty
from types import TracebackType
from typing import Any, Final

from ecu_sim.errors import ConfigError
from ecu_sim.pedals.reading import PedalReading

ESC: Final = 0x1B
#: the final byte of an arrow key's escape sequence -> the key
_ARROWS: Final = {ord("A"): "up", ord("B"): "down", ord("C"): "right", ord("D"): "left"}
#: plain keys -> what they do
_LETTERS: Final = {ord("b"): "brake", ord(" "): "brake", ord("r"): "resume", ord("c"): "cancel",
                   ord("0"): "release", ord("m"): "full"}
#: what the keys do, for the help line the command prints
HELP: Final = ("up/down: pedal +/- one step, 0: release, m: full pedal, b or space: brake, "
               "r: resume, c: cancel cruise, Ctrl-C: quit")


def decode(data: bytes) -> tuple[list[str], bytes]:
    """The keys in ``data`` and the unfinished escape sequence at its end (to prepend to the next read).

    Bytes that are no key ecu-sim knows, and escape sequences other than the arrows (function
    keys, Alt combinations), are skipped.
    """
    keys: list[str] = []
    i, n = 0, len(data)
    while i < n:
        byte = data[i]
        if byte != ESC:
            if byte in _LETTERS:
                keys.append(_LETTERS[byte])
            i += 1
            continue
        if i + 1 >= n:
            return keys, data[i:]
        if data[i + 1] not in b"[O":
            i += 1  # a lone ESC (or Alt+key): not a sequence we read
            continue
        # CSI / SS3: parameter bytes 0x30..0x3F, then one final byte 0x40..0x7E
        j = i + 2
        while j < n and 0x30 <= data[j] <= 0x3F:
            j += 1
        if j >= n:
            return keys, data[i:]
        if data[j] in _ARROWS:
            keys.append(_ARROWS[data[j]])
        i = j + 1
    return keys, b""


class KeyPedal:
    """The pedal and buttons the keys have set so far: the pedal stays where it was stepped to."""

    def __init__(self, step_pct: float, press_reads: int) -> None:
        self.step_pct = step_pct
        self.press_reads = max(1, press_reads)
        self.app_pct = 0.0
        self._held = {"brake": 0, "resume": 0, "cancel": 0}

    def press(self, key: str) -> None:
        if key == "up":
            self.app_pct = min(100.0, self.app_pct + self.step_pct)
        elif key == "down":
            self.app_pct = max(0.0, self.app_pct - self.step_pct)
        elif key == "release":
            self.app_pct = 0.0
        elif key == "full":
            self.app_pct = 100.0
        elif key in self._held:
            self._held[key] = self.press_reads

    def read(self) -> PedalReading:
        held = self._held
        reading = PedalReading(self.app_pct, 100.0 if held["brake"] else 0.0, held["resume"] > 0,
                               held["cancel"] > 0)
        for key, reads in held.items():
            if reads:
                held[key] = reads - 1
        return reading


class TerminalKeys:
    """Standard input in cbreak mode (no echo, no line buffering; Ctrl-C still stops the run).

    A context manager: the terminal's mode is restored however the run ends.
    """

    def __init__(self, pedal: KeyPedal, fd: int | None = None) -> None:
        self.pedal = pedal
        self.fd = sys.stdin.fileno() if fd is None else fd
        self._saved: list[Any] | None = None
        self._pending = b""

    def __enter__(self) -> TerminalKeys:
        if not os.isatty(self.fd):
            raise ConfigError("the keyboard pedal needs a terminal on standard input; give an input "
                              "device with --device /dev/input/eventN (see --list), or run "
                              "`ecu-sim driver` in a terminal")
        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def read(self) -> PedalReading:
        """Take the keys typed since the last read (without waiting), then the pedal and buttons."""
        while select.select([self.fd], [], [], 0.0)[0]:
            chunk = os.read(self.fd, 256)
            if not chunk:
                break
            keys, self._pending = decode(self._pending + chunk)
            for key in keys:
                self.pedal.press(key)
        return self.pedal.read()
