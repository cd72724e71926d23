"""``--restbus FILE.dbc``: a DBC's nodes as the rest of the bus, read and checked before the bus opens.

A restbus node is a DBC node that sends messages: its source address is its ``NmStationAddress``
and its NAME fields its ``NmJ1939*`` attributes (:mod:`ecu_sim.codec.nm`). Each of its messages
goes at its ``GenMsgCycleTime`` when its ``GenMsgSendType`` is cyclic (or the DBC gives a cycle
time and no send type), and only on request when the send type is anything else: a message a
request gets, not a guess at a rate. Each signal starts from its ``GenSigStartValue`` when the DBC
sets one for it, else "not available" (all ones), since the attribute's default of 0 is a real
value (0 km/h, -125 % torque) that the DBC's author did not choose. A message with one
multiplexer has a page per multiplexer value the DBC gives its signals, sent in turn, one page a
send: the FMS-Standard's VW carries "the next axle" at each repetition, multiplexed on its axle
location.

Every mistake is found here, as one line that names the file and the node or message, so a run
never opens a bus for a restbus it cannot send.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Container
from dataclasses import dataclass

import cantools
from cantools.database.can import Database, Message, Signal

from ecu_sim.codec.nm import node_attributes
from ecu_sim.codec.spn import SignalLayout
from ecu_sim.errors import ConfigError

#: FMS1's tell-tales have no SPN (J1939DA reserves the PGN for the FMS-Standard without fields): a
#: signal with this DBC attribute, the tell-tale's ID, is found by :data:`TELLTALE_KEY` plus the ID,
#: as one with an SPN is found by its SPN; the key lies beyond every SPN (19 bits)
TELLTALE_ATTRIBUTE = "FmsTellTale"
TELLTALE_KEY = 1 << 19
#: the send types that mean "periodic at the cycle time", in lower case: DBC tools spell their
#: enums differently ("cyclic", "Cyclic", "cyclicIfActive", "IfActive")
_CYCLIC = frozenset({"cyclic", "cyclicifactive", "ifactive", "cyclicandtriggered"})


@dataclass(frozen=True)
class RestbusMessage:
    """A message a restbus node sends: its cycle in milliseconds, None for on request only, and
    its payload before the truck's values (start values, the rest not available)."""

    message: Message
    cycle_ms: int | None
    base: int
    #: a multiplexed message's pages in turn: each multiplexer value, with its payload before the
    #: truck's values (the multiplexer set, that page's start values); empty for a plain message
    pages: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class RestbusNode:
    """A DBC node that sends: its name, address, NAME attributes and messages."""

    name: str
    address: int
    attributes: dict[str, int]
    messages: tuple[RestbusMessage, ...]


@dataclass(frozen=True)
class Restbus:
    """One ``--restbus`` file: its database and its sending nodes."""

    path: str
    database: Database
    nodes: tuple[RestbusNode, ...]


def load_restbus(path: str) -> Restbus:
    """The file's sending nodes; ConfigError names the file and what is wrong in one line.

    The strict parse is slow and a run asks twice (``prepare`` checks the file before the bus
    opens, the build then uses it), so one version of a file is parsed once: a file changed since
    (its modification time or size) is parsed again.
    """
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(f"--restbus {path}: no such file") from None
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _parsed(path: str, mtime_ns: int, size: int) -> Restbus:
    """:func:`load_restbus` for one version of the file; the version is the cache's key alone."""
    try:
        database = cantools.database.load_file(path, database_format="dbc", strict=True)
    except FileNotFoundError:
        raise ConfigError(f"--restbus {path}: no such file") from None
    except Exception as exc:  # cantools raises several kinds; each names the line or the message
        reason = " ".join(str(exc).split())
        raise ConfigError(f"--restbus {path}: not a valid DBC: {reason}") from None
    if not isinstance(database, Database):
        raise ConfigError(f"--restbus {path}: not a CAN database")
    found = (_node(path, database, n.name) for n in database.nodes)
    nodes = tuple(node for node in found if node is not None)
    if not nodes:
        raise ConfigError(f"--restbus {path}: no node sends a message (BO_ ... sender)")
    return Restbus(path, database, nodes)


def _node(path: str, database: Database, name: str) -> RestbusNode | None:
    sent = [m for m in database.messages if name in (m.senders or ())]
    if not sent:
        return None
    attributes = node_attributes(database, [name])
    address = attributes.pop("address", None)
    if address is None:
        raise ConfigError(f"--restbus {path}: node {name} sends {sent[0].name} but has no source address "
                          f"(BA_ \"NmStationAddress\" BU_ {name} 0..253)")
    return RestbusNode(name, address, attributes, tuple(_message(path, m) for m in sent))


def _message(path: str, message: Message) -> RestbusMessage:
    send_type, cycle = message.send_type, message.cycle_time or None
    if send_type is None and cycle is None:
        raise ConfigError(f"--restbus {path}: message {message.name} (0x{message.frame_id:X}) has neither a "
                          "cycle time (GenMsgCycleTime) nor a send type (GenMsgSendType)")
    if send_type is not None and send_type.lower() not in _CYCLIC:
        cycle = None  # sent on request only
    elif cycle is None:
        raise ConfigError(f"--restbus {path}: message {message.name} (0x{message.frame_id:X}) is "
                          f"{send_type} but has no cycle time (GenMsgCycleTime)")
    return RestbusMessage(message, cycle, _start_payload(message), _pages(message))


def _pages(message: Message) -> tuple[tuple[int, int], ...]:
    """Each value of the message's one multiplexer, in increasing order, with its page's payload;
    none for a message without a multiplexer or with several (whose muxed signals stay n/a)."""
    multiplexers = [signal for signal in message.signals if signal.is_multiplexer]
    if len(multiplexers) != 1:
        return ()
    selector = SignalLayout.of(multiplexers[0])
    values = sorted({value for signal in message.signals for value in signal.multiplexer_ids or ()})
    return tuple((value, selector.with_raw(_start_payload(message, value), message.length, value))
                 for value in values)


def _start_payload(message: Message, page: int | None = None) -> int:
    """The payload with each signal's start value, the rest all ones ("not available"); with
    ``page``, that multiplexer value's signals too."""
    length = message.length
    payload = (1 << (8 * length)) - 1
    for signal in message.signals:
        if signal.raw_initial is not None and on_page(signal, page):
            payload = SignalLayout.of(signal).with_raw(payload, length, int(signal.raw_initial))
    return payload


def keyed_signals(message: Message, keys: Container[int]) -> list[tuple[int, Signal]]:
    """The message's signals whose key (:func:`signal_key`) is one of ``keys``, with it, in its order."""
    return [(key, signal) for signal in message.signals
            if (key := signal_key(signal)) is not None and key in keys]


def signal_key(signal: Signal) -> int | None:
    """A signal's SPN, or for an FMS1 tell-tale :data:`TELLTALE_KEY` plus its ID; None without either
    (cantools reads an SPN the DBC does not set as the attribute's default, 0, which is no SPN)."""
    if signal.spn:
        return int(signal.spn)
    attribute = signal.dbc.attributes.get(TELLTALE_ATTRIBUTE) if signal.dbc is not None else None
    return None if attribute is None else TELLTALE_KEY + int(attribute.value)


def on_page(signal: Signal, page: int | None) -> bool:
    """Whether ``signal`` is sent on the page of multiplexer value ``page`` (None: a plain message)."""
    return signal.multiplexer_ids is None or (page is not None and page in signal.multiplexer_ids)
