"""The restbus: every node of a ``--restbus`` DBC that the ECU process does not host, on its port.

A restbus node is the same kind of node as the transmission, the brakes and the retarder: a
J1939 network part of its own (:func:`ecu_sim.member.part.build_member`: its NAME and address
from the DBC, its claim, its answers to requests, its DM1, empty unless a DTC is raised), and
messages that are :class:`~ecu_sim.powertrain.engine_frames.EngineMessage`\\ s on the one
schedule, sent only while its claim stands. A signal whose SPN is one the truck has carries the
truck's reading (:data:`RESTBUS_FIELDS`); one whose SPN is a text the settings give (the VIN)
carries that text, written once into the message's payload; the others carry the DBC's start
value or "not available" (:mod:`ecu_sim.codec.restbus_dbc`). A multiplexed message is one
``EngineMessage`` per page on one output, each every pages-times-the-cycle ticks, a cycle apart:
on the bus the message goes at its cycle, with the next page each time. A node at an address the
process already hosts is the hosted one, and is left out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from cantools.database.can import Message

from ecu_sim.bus.transmit import Output, Transmitter
from ecu_sim.codec.profile import builtin_restbus
from ecu_sim.codec.restbus_dbc import TELLTALE_KEY, RestbusNode, keyed_signals, load_restbus, on_page
from ecu_sim.codec.role import RoleCodec
from ecu_sim.codec.spn import SignalLayout
from ecu_sim.j1939.frames import SINGLE_FRAME
from ecu_sim.j1939.ids import from_source, pgn_of
from ecu_sim.member.environment import NodeEnvironment
from ecu_sim.member.part import NetworkPart, build_member
from ecu_sim.powertrain.engine_frames import EngineMessage, TransportOutput, cycle_ticks
from ecu_sim.powertrain.fms import FMS_SPNS, PAGED_SPNS, TELLTALES, FmsValues
from ecu_sim.powertrain.members import SPN_FIELDS, Readings
from ecu_sim.settings.model import Settings

log = logging.getLogger(__name__)

_SPEED: Final = Readings._fields.index("front_axle_kph")
#: SPN -> the index it is read from in the readings followed by what the FMS state carries
#: (:attr:`~ecu_sim.powertrain.fms.FmsState.carried`), for any
#: restbus signal: the powertrain's own, the truck's speed as the wheel-based (84) and the
#: tachograph's (1624) speed, and the FMS values; the total fuel (250) is the persisted total; and
#: FMS1's tell-tales by their keys (:data:`~ecu_sim.codec.restbus_dbc.TELLTALE_KEY` plus the ID)
RESTBUS_FIELDS: Final = {**SPN_FIELDS, 84: _SPEED, 1624: _SPEED,
                         **{spn: len(Readings._fields) + FmsValues._fields.index(name)
                            for spn, name in FMS_SPNS.items()},
                         250: len(Readings._fields) + FmsValues._fields.index("total_fuel_l"),
                         **{TELLTALE_KEY + telltale.ident: len(Readings._fields) + len(FmsValues._fields) + i
                            for i, telltale in enumerate(TELLTALES)}}
#: a node's J1939 function when the DBC gives none: "not available"
_NO_FUNCTION: Final = 255


@dataclass
class RestbusBuilt:
    """The restbus nodes' parts by node name, and their cyclic messages."""

    parts: dict[str, NetworkPart]
    messages: list[EngineMessage]


def restbus_files(settings: Settings) -> list[str]:
    """The restbus DBCs of a run: ``--fms``'s own first (its nodes win an address), then ``--restbus``'s."""
    return [*([builtin_restbus("fms")] if settings.fms.enabled else []), *settings.j1939.restbus]


def build_restbus(paths: Collection[str], hosted: Collection[int], env: NodeEnvironment,
                  latest: Callable[[], Sequence[float] | None], texts: Mapping[int, str]) -> RestbusBuilt:
    """``latest``: the newest readings followed by the FMS values, which a request is answered from;
    ``texts``: the text each text SPN carries (:func:`~ecu_sim.powertrain.fms.fms_texts`)."""
    built = RestbusBuilt({}, [])
    taken = set(hosted)
    for path in paths:
        for node in load_restbus(path).nodes:
            if node.address in taken:
                log.info("--restbus %s: node %s at 0x%02X is hosted already; left out", path, node.name,
                         node.address)
                continue
            taken.add(node.address)
            _add_node(built, node, env, latest, texts)
    return built


def _add_node(built: RestbusBuilt, node: RestbusNode, env: NodeEnvironment,
              latest: Callable[[], Sequence[float] | None], texts: Mapping[int, str]) -> None:
    """The node's part and messages, each built once with everything it needs: the part first,
    since the messages wait for its claim and send through its transport; a request the part
    answers reads the message its PGN names once that is built."""
    made: dict[int, EngineMessage] = {}  # a PGN's first message (a multiplexed one's first page)

    def answer(pgn: int) -> Callable[[], bytes | None]:
        def payload() -> bytes | None:
            readings = latest()
            return None if readings is None else made[pgn].payload(readings)
        return payload

    pgns = dict.fromkeys(pgn_of(rest.message.frame_id) for rest in node.messages)
    function = node.attributes.get("function", _NO_FUNCTION)
    requestable = {pgn: answer(pgn) for pgn in pgns}
    part = build_member(node.name, function, node.address, env, [node.name], requestable, node.attributes)
    for rest in node.messages:
        message = rest.message
        pgn = pgn_of(message.frame_id)
        if message.length > SINGLE_FRAME:
            output: Output = TransportOutput(part, pgn)
        else:
            extended = message.is_extended_frame
            frame_id = from_source(message.frame_id, node.address) if extended else message.frame_id
            output = Transmitter(env.port, frame_id, extended, env.new_frame)
        every = cycle_ticks(rest.cycle_ms, env.period_s)
        pages = rest.pages or ((None, rest.base),)
        for index, (page, base) in enumerate(pages):
            fields = _page_fields(index) if rest.pages else RESTBUS_FIELDS
            codecs = [(RoleCodec(message, signal, is_j1939=signal.length >= 8, paged=page is not None), spn)
                      for spn, signal in keyed_signals(message, fields) if on_page(signal, page)]
            m = EngineMessage(message, codecs, every * len(pages), output, fields, gate=part,
                              base=_with_texts(message, base, texts), period_s=env.period_s,
                              phase=index * every)  # the pages in turn, one a cycle
            made.setdefault(pgn, m)
            if rest.cycle_ms is not None:
                built.messages.append(m)
    built.parts[node.name] = part


def _page_fields(index: int) -> dict[int, int]:
    """The fields of the ``index``-th page of a multiplexed message: a paged SPN (the axle weight)
    carries its ``index``-th field, or "not available" past its last."""
    fields = dict(RESTBUS_FIELDS)
    for spn, names in PAGED_SPNS.items():
        if index < len(names):
            fields[spn] = len(Readings._fields) + FmsValues._fields.index(names[index])
        else:
            fields.pop(spn, None)
    return fields


def _with_texts(message: Message, base: int, texts: Mapping[int, str]) -> int:
    """``base`` with each text signal (its SPN in ``texts``; Intel, whole bytes) holding its text in
    ASCII: the text's last bytes when the signal is shorter (FMS sends a subset of the VIN, such as
    its last eight characters), padded with FFh (not available) when it is longer."""
    for signal in message.signals:
        text = texts.get(signal.spn) if signal.spn is not None else None
        if text is None or signal.byte_order != "little_endian" or signal.start % 8 or signal.length % 8:
            continue
        size = signal.length // 8
        data = text.encode("ascii")[-size:].ljust(size, b"\xff")
        base = SignalLayout.of(signal).with_raw(base, message.length, int.from_bytes(data, "little"))
    return base
