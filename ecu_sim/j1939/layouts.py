"""The fixed network-management layouts, packed by cantools from the layer's own DBC.

Request, Acknowledgement, Address Claimed (the NAME fields) and the transport frames have one
layout each, so a DBC describes them and cantools packs them; nothing here hand-packs bits. The
DBC ships inside this package because the layer is the same under every profile: an amp bus and
a J1939 bus carry the same claim and request bytes. J1939 sends bits a message leaves unset as 1,
so :func:`encode` fills every signal it is not given with all ones.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import cantools.database

REQUEST = "Request"
ACKNOWLEDGEMENT = "Acknowledgement"
ADDRESS_CLAIMED = "AddressClaimed"
TP_CM = "TP_CM"
TP_DT = "TP_DT"


@functools.cache
def _database() -> Any:
    text = resources.files(__package__).joinpath("network.dbc").read_text(encoding="utf-8")
    return cantools.database.load_string(text, database_format="dbc")


def _message(name: str) -> Any:
    return _database().get_message_by_name(name)


def encode(name: str, values: dict[str, int]) -> bytes:
    """The payload of message ``name``; signals not in ``values`` are all ones (not available)."""
    message = _message(name)
    full = dict(values)
    selected = _selected_signals(message, values)
    for signal in selected:
        full.setdefault(signal.name, (1 << signal.length) - 1)
    data: bytes = message.encode(full, scaling=False, strict=False)
    return data


def decode(name: str, data: bytes) -> dict[str, int]:
    """Raw signal values of message ``name`` in ``data`` (short data raises ``ValueError``)."""
    message = _message(name)
    if len(data) < message.length:
        raise ValueError(f"{name} needs {message.length} bytes, got {len(data)}")
    try:
        decoded = message.decode(bytes(data[:message.length]), decode_choices=False, scaling=False)
    except Exception as exc:  # cantools raises its own error types for an unknown multiplexer
        raise ValueError(f"{name}: {exc}") from exc
    return {key: int(value) for key, value in decoded.items()}


def length(name: str) -> int:
    """The DBC's length of message ``name`` in bytes."""
    return int(_message(name).length)


def _selected_signals(message: Any, values: dict[str, int]) -> list[Any]:
    """The signals of the multiplexed variant chosen by ``values`` (all signals when not muxed)."""
    signals = list(message.signals)
    muxers = [s for s in signals if s.is_multiplexer]
    if not muxers:
        return signals
    chosen = values[muxers[0].name]
    return [s for s in signals if s.multiplexer_ids is None or chosen in s.multiplexer_ids]
