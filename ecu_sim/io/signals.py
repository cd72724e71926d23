"""What a tick looked like, as named signals: the picture the live stream and the MCAP file share.

A viewer (PlotJuggler, Foxglove) plots by name, and on a J1939 bus a name alone is ambiguous: the
same message comes from several source addresses, with any priority. So every decoded frame is
filed under its node, its direction and a key made of the DBC message's name, its PGN and its
source address (``EEC2 PGN 61443 SA 0x26``), and each signal of the message is decoded by
cantools from the DBC the run uses; no layout is written here.

A :class:`NodeView` is a listener of one node's port: it keeps the newest received and sent
frame of each key during a tick. A :class:`TickView` turns the views into one nested dictionary
per tick, with the model state, the loop's timing and the counters, ready for ``json.dumps``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import can
from cantools.database.can import Database, Message

from ecu_sim.bus.listener import Direction
from ecu_sim.codec.profile import is_j1939_database
from ecu_sim.j1939.ids import pgn_of, source_address_of
from ecu_sim.nodes.figures import Counted, Figured, recorded
from ecu_sim.runtime.loop import LATE_FRACTION, LoopStats

#: a node's named numbers: its model state, or its counters
Numbers = Callable[[], Mapping[str, float]]


class FrameDecoder:
    """Every message of the DBC by how it is matched: J1939 ones by PGN, the others by identifier."""

    def __init__(self, database: Database) -> None:
        self._by_pgn: dict[int, Message] = {}
        self._by_id: dict[tuple[int, bool], Message] = {}
        j1939 = is_j1939_database(database)
        for message in database.messages:
            if message.is_extended_frame and (message.protocol == "j1939" or j1939):
                self._by_pgn[pgn_of(message.frame_id)] = message
            self._by_id[(message.frame_id, message.is_extended_frame)] = message

    def message(self, msg: can.Message) -> Message | None:
        """The DBC message a frame is, or None for a frame the DBC does not describe."""
        found = self._by_id.get((msg.arbitration_id, msg.is_extended_id))
        if found is None and msg.is_extended_id:
            found = self._by_pgn.get(pgn_of(msg.arbitration_id))
        return found

    def key(self, msg: can.Message, message: Message) -> str:
        """``NAME PGN n SA 0xNN`` for a J1939 frame, ``NAME 0xID`` for any other."""
        if msg.is_extended_id and pgn_of(message.frame_id) == pgn_of(msg.arbitration_id):
            return (f"{message.name} PGN {pgn_of(msg.arbitration_id)} "
                    f"SA 0x{source_address_of(msg.arbitration_id):02X}")
        return f"{message.name} 0x{msg.arbitration_id:X}"

    def decode(self, msg: can.Message) -> tuple[str, dict[str, float]] | None:
        """The frame's key and its signals by name, scaled; None when the DBC cannot decode it."""
        if msg.is_error_frame or msg.is_remote_frame:
            return None
        message = self.message(msg)
        if message is None:
            return None
        try:
            values = message.decode(bytes(msg.data), decode_choices=False, allow_truncated=True,
                                    allow_excess=True)
        except Exception:  # cantools raises many types for a frame that does not fit
            return None
        assert isinstance(values, dict)
        return self.key(msg, message), {name: float(value) for name, value in values.items()
                                        if isinstance(value, int | float) and math.isfinite(value)}


class NodeView:
    """A port listener that keeps one tick's newest frame of each key, received and sent."""

    def __init__(self, name: str, decoder: FrameDecoder, state: Numbers, counters: Numbers) -> None:
        self.name = name
        self._decoder = decoder
        self._state = state
        self._counters = counters
        self._frames: list[tuple[str, can.Message]] = []
        #: whether frames are kept for a take; off while a sampling reader does not read (TickView)
        self.keeping = True

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if not self.keeping:
            return
        if direction is Direction.RECEIVED:
            self._frames.append(("rx", msg))
        elif direction is Direction.SENT:
            self._frames.append(("tx", msg))

    def forget(self) -> None:
        """The frames since the last take let go, undecoded."""
        self._frames.clear()

    def take(self) -> dict[str, Any]:
        """The group of this node since the last take (a tick, or several when a viewer samples);
        the frames are forgotten, the next take starts empty."""
        group: dict[str, Any] = {"rx": {}, "tx": {}}
        newest = self._newest()
        for _, way, key, _ in sorted(newest, key=lambda entry: entry[0]):  # where its identifier first came
            group[way].setdefault(key, None)
        for _, way, key, (_, signals) in sorted(newest, key=lambda entry: entry[3][0]):  # the newest wins
            group[way][key] = signals
        self._frames.clear()
        group["state"] = dict(self._state())
        group["counters"] = dict(self._counters())
        return group

    def _newest(self) -> list[tuple[int, str, str, tuple[int, dict[str, float]]]]:
        """Of each identifier its newest frame that decodes, once: a sampling viewer lets many of
        one identifier pile up between its takes. Each as (where its identifier first came, way,
        key, (where it came, signals)); the group built from them is the one that decoding every
        frame in order gives, since a frame's key follows from its identifier."""
        decode = self._decoder.decode
        first: dict[tuple[str, int, bool, bool, bool], int] = {}
        for index, (way, msg) in enumerate(self._frames):
            first.setdefault((way, msg.arbitration_id, msg.is_extended_id, msg.is_error_frame,
                              msg.is_remote_frame), index)
        decided: set[tuple[str, int, bool, bool, bool]] = set()
        kept: list[tuple[int, str, str, tuple[int, dict[str, float]]]] = []
        for index in range(len(self._frames) - 1, -1, -1):
            way, msg = self._frames[index]
            ident = (way, msg.arbitration_id, msg.is_extended_id, msg.is_error_frame, msg.is_remote_frame)
            if ident in decided:
                continue
            decoded = decode(msg)
            if decoded is not None:
                decided.add(ident)
                kept.append((first[ident], way, decoded[0], (index, decoded[1])))
        return kept


class TickView:
    """One dictionary per tick: ``timestamp``, the loop's timing, and a group per node."""

    def __init__(self, views: Sequence[NodeView], stats: LoopStats, period_s: float,
                 timestamp: Callable[[float], float], sampled: bool = False) -> None:
        """``timestamp(now)``: the time a viewer puts on its axis (wall time, or virtual time);
        ``sampled``: its only reader takes it now and then and says when it does (:meth:`watch`):
        until then, and whenever it stops, the views keep no frames."""
        self.views = tuple(views)
        self._sampled = sampled
        self.watch(False)
        self._stats = stats
        self._period_s = period_s
        self._timestamp = timestamp
        self._start: float | None = None
        self._last: tuple[int, dict[str, Any]] | None = None

    def take(self, tick: int, now: float, transmitted: bool) -> dict[str, Any]:
        """The tick's dictionary; asked again for the same tick (a stream and an MCAP file), the same."""
        if self._last is not None and self._last[0] == tick:
            return self._last[1]
        snapshot = self.timing(tick, now, transmitted)
        for view in self.views:
            snapshot[view.name] = view.take()
        self._last = (tick, snapshot)
        return snapshot

    def timing(self, tick: int, now: float, transmitted: bool) -> dict[str, Any]:
        """The tick's ``timestamp`` and ``loop`` alone, without the frames (which stay)."""
        if self._start is None:
            self._start = now - tick * self._period_s
        lateness = now - (self._start + tick * self._period_s)
        stats = self._stats
        return {
            "timestamp": self._timestamp(now),
            "loop": {"tick": tick, "t_s": round(tick * self._period_s, 9),
                     "lateness_ms": round(lateness * 1000.0, 3),
                     "late": int(lateness > LATE_FRACTION * self._period_s), "transmitted": int(transmitted),
                     "late_ticks": stats.late, "skipped_ticks": stats.skipped},
        }

    def watch(self, watching: bool) -> None:
        """A sampled view's reader starts or stops reading: the views keep the frames from now on,
        or none (a listener that keeps nothing costs the frames of a node nobody looks at least)."""
        if not self._sampled:
            return  # a reader of every tick takes the frames itself
        for view in self.views:
            view.keeping = watching
            view.forget()

    def forget(self) -> None:
        """Let the frames so far go undecoded: a reader that samples now and then (the page while
        nobody looks) leaves them, and a reader of every tick has taken them already."""
        for view in self.views:
            view.forget()


def node_state(node: Figured) -> Mapping[str, float]:
    """What the model holds after a tick: the node's recorded figures that have a number now."""
    return recorded(node.figures())


def node_counters(node: Counted) -> Mapping[str, float]:
    """The node's counters as the status line shows them, by name."""
    return {figure.name: figure.value for figure in node.counter_figures()
            if isinstance(figure.value, int | float)}
