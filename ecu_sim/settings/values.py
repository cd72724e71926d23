"""Text as a person types it into an INI file, a variable or an option, turned into typed values.

Every conversion that can fail says which key, where it was given and what would have been
accepted: a word that is neither true nor false is an error rather than a quiet False, so
``fd = ja`` does not switch CAN FD off behind the user's back.
"""

from __future__ import annotations

import argparse
import configparser
import re
import typing
from collections.abc import Iterable
from typing import Any

from ecu_sim.errors import ConfigError

#: the words for true and false, configparser's own (``getboolean``), so INI files behave as usual
TRUTH_WORDS: typing.Final = dict(configparser.ConfigParser.BOOLEAN_STATES)
#: between the items of a list: a line break (a multi-line INI value) or ','
_LIST_SEPARATORS = re.compile(r"[\n,]")


def parse_bool(raw: str, key: str, origin: str) -> bool:
    """``raw`` as a truth value; ConfigError names ``key``, ``origin`` and the accepted words."""
    word = raw.strip().lower()
    if word not in TRUTH_WORDS:
        true = "/".join(w for w, v in TRUTH_WORDS.items() if v)
        false = "/".join(w for w, v in TRUTH_WORDS.items() if not v)
        raise ConfigError(f"{key} must be {true} for true or {false} for false (got {raw!r}, {origin})")
    return TRUTH_WORDS[word]


def bus_value(key: str, raw: str) -> str | int | bool:
    """A ``[bus]`` value as python-can's bus options take it: bit rates as integers, ``fd`` as a
    truth value, the rest as text (python-can casts its own keyword arguments)."""
    if key in ("bitrate", "data_bitrate"):
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"[bus] {key} must be an integer in bit/s (got {raw!r})") from None
    if key == "fd":
        return parse_bool(raw, "[bus] fd", "in the configuration")
    return raw


def split_list(raw: str | Iterable[str]) -> tuple[str, ...]:
    """The items of a list: one per line or separated by ','; repeated options may hold several each."""
    pieces = [raw] if isinstance(raw, str) else list(raw)
    return tuple(item.strip() for piece in pieces for item in _LIST_SEPARATORS.split(piece) if item.strip())


def source_address(text: str) -> int:
    """A J1939 source address as typed by a person: 38, 0x26.

    ``argparse.ArgumentTypeError`` says why not, so ``--app-source 300`` prints the valid range.
    """
    try:
        value = int(text.strip(), 0)
    except ValueError:
        value = -1
    if not 0 <= value <= 253:
        raise argparse.ArgumentTypeError(
            f"a J1939 source address is a number 0..253, decimal or 0x hex, e.g. 38 or 0x26 (got {text!r})")
    return value


def convert(raw: Any, hint: Any, key: str, origin: str) -> Any:
    """``raw`` as the type ``hint`` of a settings field; argparse's typed values pass unchanged."""
    if typing.get_origin(hint) is tuple:
        return split_list(raw)
    if not isinstance(raw, str):
        return raw
    optional = type(None) in typing.get_args(hint)
    target = next((t for t in typing.get_args(hint) if t is not type(None)), hint)
    text = raw.strip()
    if optional and text.lower() in ("", "none"):
        return None
    if target is int and (key.endswith("_source") or key == "address"):
        try:
            return source_address(text)
        except argparse.ArgumentTypeError as exc:
            raise ConfigError(f"{key}: {exc} ({origin})") from None
    if target is bool:
        return parse_bool(text, key, origin)
    try:
        return target(text)
    except ValueError:
        raise ConfigError(f"{key} must be a {getattr(target, '__name__', target)} "
                          f"(got {raw!r}, {origin})") from None
