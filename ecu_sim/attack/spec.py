"""How an attack is written: ``KIND[:KEY=VALUE,...][@FROM[-TO|+DURATION]]``, as plain values.

The window is the fault grammar's (:mod:`ecu_sim.faults.spec`): seconds from the start of the
run, FROM included, TO excluded, no window meaning the whole run. The parameters name the
attack's target, the source address it sends from, its rate in frames a second and its values;
each kind says which it takes and their defaults (:data:`KINDS`), so a misspelt key is refused
rather than ignored. Lists (several spoofed sources) are separated by ``/``.

This module knows nothing of buses or DBCs, so a campaign file or a command line is checked
before anything is opened.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ecu_sim.errors import ConfigError
from ecu_sim.runtime.ticks import WindowError, parse_window

#: key -> (kind of value, default); kinds of value: "address", "pgn", "number", "addresses", "word",
#: "path" (a file, the one value whose case is kept)
Params = Mapping[str, tuple[str, str | None]]

_SOURCE_DIAG = "0xf9"  # the off-board diagnostic tool, the address the published attackers use

#: attack kind -> (its parameters, what it does in one line)
KINDS: dict[str, tuple[Params, str]] = {
    "tsc1": ({"target": ("address", "0x00"), "source": ("address", "0x2a"), "rate": ("number", "100"),
              "speed": ("number", None), "torque": ("number", None), "mode": ("word", None),
              "priority": ("number", "0")},
             "TSC1 with a valid counter and checksum: engine speed or torque override, or a torque "
             "limit (engine brake disabled with target=0x0f,torque=0)"),
    "xbr": ({"target": ("address", "0x0b"), "source": ("address", "0x2a"), "rate": ("number", "50"),
             "accel": ("number", "-4"), "mode": ("word", "max"), "priority": ("number", "0")},
            "XBR with a valid counter and checksum: a deceleration (or acceleration) demand"),
    "spoof": ({"message": ("word", "CCVS1"), "spn": ("number", "84"), "value": ("number", "0"),
               "source": ("address", None), "rate": ("number", "100")},
              "another node's message with one SPN set, from that node's address"),
    "request": ({"target": ("address", "0x00"), "source": ("address", _SOURCE_DIAG),
                 "pgn": ("pgn", "0xfeeb"), "rate": ("number", "2000")},
                "request overload: Requests for a multi-packet PGN, as fast as the rate"),
    "exhaust": ({"target": ("address", "0x00"), "sources": ("addresses", "0x0b/0x11/0xf9"),
                 "pgn": ("pgn", "0xfeeb"), "every": ("number", "1")},
                "connection exhaustion: a Request and then CTS in the name of each source, "
                "repeated so the sessions never end"),
    "claim": ({"target": ("address", "0x00"), "name": ("number", "0"), "every": ("number", "0")},
              "address-claim attack: Address Claimed from the target's address with a lower NAME "
              "(every=0: once)"),
    "dm11": ({"target": ("address", "0xff"), "source": ("address", _SOURCE_DIAG),
              "every": ("number", "0")},
             "DM11: a Request to clear the active DTCs (every=0: once)"),
    "dm1": ({"source": ("address", "0x00"), "spn": ("number", "91"), "fmi": ("number", "9"),
             "rate": ("number", "1")},
            "DM1 spoof: an active DTC and the amber lamp in the name of the source"),
    "abort": ({"target": ("address", "0x00"), "source": ("address", _SOURCE_DIAG),
               "pgn": ("pgn", "0xfee3"), "reason": ("number", "3"), "rate": ("number", "10")},
              "TP.Conn_Abort for a PGN's sessions, in the name of the source"),
    "bam": ({"source": ("address", "0x00"), "pgn": ("pgn", "0xfee3"), "size": ("number", "1785"),
             "rate": ("number", "10")},
            "TP.CM_BAM announcing a large message in the name of the source, never followed by data"),
    "fuzz": ({"source": ("address", None), "pgn": ("pgn", None), "spn": ("number", None),
              "rate": ("number", "2000")},
             "random frames: any 29-bit identifier, one PGN (pgn=...) with random data, or random "
             "values of one SPN (spn=...) in the messages that carry it, the rest the sender's"),
    "replay": ({"file": ("path", None), "from": ("number", "0"), "to": ("number", None)},
               "the frames of a log (candump -L, ASC, BLF) from FROM to TO s after its first frame, "
               "at their recorded spacing"),
    "rts": ({"target": ("address", "0x00"), "source": ("address", _SOURCE_DIAG), "pgn": ("pgn", "0xef00"),
             "size": ("number", "20"), "false": ("number", "9"), "every": ("number", "0")},
            "malicious RTS: an RTS to the target, and when its CTS comes a second RTS of another size "
            "from the same sender mid-session, then the first message's packets"),
    "rtsflood": ({"target": ("address", "0x00"), "source": ("address", "0x80"), "count": ("number", "40"),
                  "pgn": ("pgn", "0xef00"), "size": ("number", "1785"), "every": ("number", "0")},
                 "out of memory by RTS: RTS of SIZE bytes from COUNT addresses from SOURCE on, at once"),
    "cts": ({"target": ("address", "0x00"), "peer": ("address", _SOURCE_DIAG), "pgn": ("pgn", "0xfee3"),
             "packets": ("number", "255"), "next": ("number", "6"), "every": ("number", "0")},
            "malicious CTS: a Request to the target, its RTS answered with a CTS for packets past the "
            "message's end"),
    "interrupt": ({"target": ("address", "0x00"), "peer": ("address", _SOURCE_DIAG), "pgn": ("pgn", "0xfee3"),
                   "by": ("word", "eoma"), "packets": ("number", "2"), "every": ("number", "0")},
                  "EoMA or abort interruption: a Request to the target, its RTS answered by a CTS for "
                  "PACKETS, then an EoMA (by=eoma) or abort (by=abort) mid-transfer"),
    "dt": ({"target": ("address", "0x00"), "source": ("address", _SOURCE_DIAG), "pgn": ("pgn", "0xef00"),
            "size": ("number", "20"), "mode": ("word", "spoof"), "fill": ("number", "0"),
            "every": ("number", "0")},
           "TP.DT spoof or overwrite: an RTS to the target, and when its CTS comes the message's packets "
           "with a packet 1 of FILL bytes ahead of its own (spoof) or after it (overwrite)"),
}
_SPEC = re.compile(r"^(?P<kind>[A-Za-z0-9_]+)(?::(?P<params>[^@]*))?(?:@(?P<window>.+))?$")
_EXAMPLE = "e.g. tsc1:target=0x00,speed=2000@30+10"


@dataclass(frozen=True)
class Attack:
    """One attack of a run: its kind, its parameters resolved to numbers, its window."""

    kind: str
    params: tuple[tuple[str, float | tuple[int, ...] | str | None], ...]
    start_s: float = 0.0
    #: exclusive; None: until the end of the run
    end_s: float | None = None
    #: the text it was written as, for labels and manifests
    text: str = ""

    def get(self, key: str) -> float | tuple[int, ...] | str | None:
        return dict(self.params)[key]

    def number(self, key: str) -> float:
        value = self.get(key)
        if not isinstance(value, float):
            raise TypeError(f"{self.kind}: {key} is not a number")
        return value

    def address(self, key: str) -> int:
        return int(self.number(key))


def parse_attack(text: str, where: str = "--attack") -> Attack:
    """One attack from its text form; ConfigError names ``where`` and what is expected."""
    match = _SPEC.match(text.strip())
    if match is None:
        raise ConfigError(f"{where} {text!r}: expected KIND[:KEY=VALUE,...][@FROM[-TO|+DURATION]], "
                          f"{_EXAMPLE}")
    kind = match["kind"].lower()
    if kind not in KINDS:
        raise ConfigError(f"{where} {text!r}: unknown attack {kind!r}; known: {', '.join(KINDS)}")
    params = _params(kind, match["params"] or "", f"{where} {text!r}")
    start, end = _window(match["window"], f"{where} {text!r}")
    return Attack(kind, params, start, end, text.strip())


def _params(kind: str, text: str, where: str) -> tuple[tuple[str, float | tuple[int, ...] | str | None], ...]:
    known = KINDS[kind][0]
    given: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or not value.strip():
            raise ConfigError(f"{where}: {item!r} is not KEY=VALUE")
        if key not in known:
            raise ConfigError(f"{where}: {kind} takes no {key!r}; it takes {', '.join(known)}")
        given[key] = value.strip() if known[key][0] == "path" else value.strip().lower()
    return tuple((key, _value(key, kind_of, given.get(key, default), where))
                 for key, (kind_of, default) in known.items())


def _value(key: str, kind_of: str, text: str | None, where: str) -> float | tuple[int, ...] | str | None:
    if text is None or kind_of in ("word", "path"):
        return text
    try:
        if kind_of == "addresses":
            found = tuple(int(part, 0) for part in text.split("/"))
            if any(not 0 <= a <= 0xFD for a in found):
                raise ValueError
            return found
        number = float(int(text, 0)) if kind_of in ("address", "pgn") else float(text)
    except ValueError:
        raise ConfigError(f"{where}: {key}={text} is not {_MEANING[kind_of]}") from None
    limit = {"address": 0xFF, "pgn": 0x3FFFF}.get(kind_of)
    if not math.isfinite(number) or (limit is not None and not 0 <= number <= limit) or (
            key in ("rate", "every", "from", "to") and number < 0):
        raise ConfigError(f"{where}: {key}={text} is not {_MEANING[kind_of]}")
    return number


_MEANING = {"address": "an address 0..0xff (e.g. 0x00)", "pgn": "a PGN 0..0x3ffff (e.g. 0xfeeb)",
            "number": "a finite number (not negative for a rate, every, from or to)",
            "addresses": "addresses 0..0xfd separated by '/' (e.g. 0x0b/0x11)"}


def _window(text: str | None, where: str) -> tuple[float, float | None]:
    try:
        return parse_window(text)
    except WindowError as exc:
        example = ", e.g. @30+10" if exc.malformed else ""
        raise ConfigError(f"{where}: {exc}{example}") from None


def check_windows(attacks: Iterable[Attack], duration_s: float | None) -> None:
    """ConfigError for an attack whose window starts at or after the end of a run of ``duration_s``
    or ends after it: it would be labelled in windows no frame of the run falls in."""
    if duration_s is None:
        return
    for attack in attacks:
        if attack.start_s >= duration_s or (attack.end_s is not None and attack.end_s > duration_s):
            raise ConfigError(f"--attack {attack.text!r}: the window reaches past the run's end at "
                              f"{duration_s:g} s; shorten it or give a longer --duration")
