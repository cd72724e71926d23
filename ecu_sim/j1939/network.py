"""One node's J1939 network layer: claim, requests, diagnostics and transport, advanced per tick.

The node hands over every frame it receives (:meth:`J1939Network.receive` keeps what concerns
the layer) and calls :meth:`J1939Network.tick` at each tick with the fault conditions that hold;
what the tick returns goes out at that tick. All of it runs on tick counts, so a simulation and
a replay give the same frames at the same ticks. The response resolution is one tick: a request
that arrived before tick ``k`` is answered at tick ``k``. Until the claim stands the node sends
only its claim, and what the layer would have sent waits for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from ecu_sim.j1939 import layouts
from ecu_sim.j1939.claim import AddressClaim, ClaimState
from ecu_sim.j1939.dm import DM1_PGN, DM2_PGN, DM11_PGN, Dtc, DtcTable
from ecu_sim.j1939.echo import Echoes
from ecu_sim.j1939.frames import (
    ADDRESS_CLAIMED_PGN,
    REQUEST_PGN,
    SINGLE_FRAME,
    TP_CM_PGN,
    TP_DT_PGN,
    Pdu,
    Received,
    arbitration_id,
    received,
)
from ecu_sim.j1939.ident import Identification
from ecu_sim.j1939.ids import GLOBAL_ADDRESS, pgn_of
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.reassembly import Reassembler
from ecu_sim.j1939.request import ACK, NACK, acknowledgement, requested_pgn, single_frame
from ecu_sim.j1939.timing import DM1_INTERVAL_S, at_least
from ecu_sim.j1939.transport import TransportSender
from ecu_sim.runtime.schedule import Schedule

_HANDLED = frozenset({REQUEST_PGN, ADDRESS_CLAIMED_PGN, TP_CM_PGN, TP_DT_PGN})
#: the shortest spell between two claims re-sent for an address violation
RECLAIM_GAP_S = 1.0


@dataclass(frozen=True)
class NetworkConfig:
    """Who the node is on the network and what it volunteers.

    ``claim`` off: the node uses ``address`` without claiming it and broadcasts nothing of its
    own (no claim, no DM1), so the bus carries its application frames only; it still answers.
    """

    name: Name
    address: int
    claim: bool = True
    identification: Identification = field(default_factory=Identification)


class J1939Network:
    """The layer of one node; ``periodic`` gives the latest payload of each PGN the node sends."""

    def __init__(self, config: NetworkConfig, period_s: float,
                 periodic: Mapping[int, Callable[[], bytes | None]] | None = None,
                 on_message: Callable[[Received], None] | None = None) -> None:
        """``on_message`` hears each message the transport protocol brought whole (but requests)."""
        self.config = config
        self.claim = AddressClaim(config.name, config.address, period_s, config.claim)
        self.dtcs = DtcTable()
        self.sender = TransportSender(period_s)
        self.reassembler = Reassembler(period_s)
        self._periodic = dict(periodic or {})
        self._on_message = on_message
        self._ids = config.identification.payloads()
        #: J1939-73's DM1: once an interval counted from the DM1 last sent, and at once when a DTC
        #: changes; the first as soon as the node may send
        self._dm1 = Schedule(at_least(DM1_INTERVAL_S, period_s))
        self._dm1.restart(0)
        self._inbox: list[Received] = []
        self._waiting: list[Pdu] = []
        #: until this tick a tick without conditions does nothing: no DTC, nothing received or
        #: pending, no DM1 due (0 as soon as something arrives); see :meth:`idle`
        self.quiet_until = 0
        #: requests answered, NACKed, and DM11 clears done
        self.answered = 0
        self.nacked = 0
        self.cleared = 0
        #: episodes of another node sending under this node's address (see :meth:`address_in_use`),
        #: and the frames from this node's address the layer heard and did not send
        self.conflicts = 0
        self.violations = 0
        self._reassert = False
        #: J1939-81 gives no rate for re-sending the claim; once a second is enough for every node
        #: to hear who owns the address, and a flood of violating frames is not answered frame
        #: for frame
        self._reclaim_gap = at_least(RECLAIM_GAP_S, period_s)
        self._reclaim_from = 0
        self._echoes = Echoes()

    @property
    def address(self) -> int:
        return self.claim.current_address

    def identify(self, identification: Identification) -> None:
        """The node's identification from now on (its application restarted from another calibration)."""
        self.config = replace(self.config, identification=identification)
        self._ids = identification.payloads()

    def may_send(self, tick: int | None = None) -> bool:
        """Whether the node's application frames may go out at ``tick`` (claimed, or not claiming)."""
        return self.claim.may_send(tick)

    def receive(self, can_id: int, data: bytes | bytearray) -> bool:
        """Keep a 29-bit frame for the next tick if it is the layer's; False for anything else.

        A frame from this node's own address that is neither its echo nor an Address Claimed is
        J1939-81's address violation: the node re-sends its claim (:meth:`address_in_use`)."""
        pgn = pgn_of(can_id)
        if can_id & 0xFF == self.claim.address and pgn != ADDRESS_CLAIMED_PGN:
            if not self._echoes.heard(can_id, data):
                self.violations += 1  # re-claimed at the next tick, at most once a RECLAIM_GAP_S
                self._reassert = True
                self.quiet_until = 0
            return pgn in _HANDLED
        if pgn not in _HANDLED:
            return False  # most frames: decided before anything is copied
        frame = received(can_id, data)
        if frame.destination in (GLOBAL_ADDRESS, self.claim.address):
            self._inbox.append(frame)
            self.quiet_until = 0
        return True

    def broadcast(self, pgn: int, payload: bytes) -> None:
        """Send one of the node's own messages to everyone from the next tick (BAM when over
        eight bytes), once the claim stands."""
        self._answer(pgn, payload, GLOBAL_ADDRESS, own=True)
        self.quiet_until = 0

    def send(self, pdu: Pdu) -> None:
        """A message of a service beside the layer (memory access) to its destination, at the
        layer's next tick once the claim stands: one frame as it is, a longer one by the
        transport protocol."""
        if len(pdu.data) <= SINGLE_FRAME:
            self._waiting.append(pdu)
        else:
            self.sender.send(pdu.pgn, pdu.data, pdu.destination)
        self.quiet_until = 0

    def sent_beside(self, frames: list[tuple[int, bytes]]) -> None:
        """Frames the node sent from its address beside the layer (its UDS answers): their echoes
        are the node's own, not another node's at its address."""
        self._echoes.sent(frames)

    def address_in_use(self) -> None:
        """Another node sends under this node's address without having claimed it (frames with our
        identifier that are not our echo): J1939-81's address conflict. The node says again that
        the address is its own, at the next tick, so a J1939 node that shares it must contend
        (the lower NAME keeps it); a sender that never claims is only counted."""
        self.conflicts += 1
        self._reassert = True
        self.quiet_until = 0

    def idle(self, tick: int) -> bool:
        """Whether a tick without conditions would do nothing: nothing received, due or pending."""
        return tick < self.quiet_until

    def tick(self, tick: int, conditions: set[Dtc]) -> list[tuple[int, bytes]]:
        """Advance one tick; the frames (identifier, data) to send now."""
        if not conditions and self.idle(tick):
            return []  # the common tick of a node on a quiet bus, which the simulation runs most
        out: list[Pdu] = []
        self.claim.tick(tick, out)
        if self._reassert:
            self._reassert = False
            if self.claim.state is ClaimState.CLAIMED and tick >= self._reclaim_from:
                self._reclaim_from = tick + self._reclaim_gap
                self.claim.on_request(out)
        before = self.dtcs.active()
        self.dtcs.update(conditions)
        if self.dtcs.active() != before:
            self._dm1.restart(tick)  # J1939-73: a DTC that changes state is broadcast at once
        inbox, self._inbox = self._inbox, []
        for frame in inbox:
            self._handle(frame, tick, out)
        if self.claim.may_send():
            self._tick_dm1(tick)
            out.extend(self._waiting)
            self._waiting = []
            self.sender.tick(tick, out)
        self.reassembler.tick(tick, out)
        self.quiet_until = self._quiet_from(tick)
        address = self.address
        frames = [(arbitration_id(pdu, address), pdu.data) for pdu in out]
        self._echoes.sent(frames)
        return frames

    def _quiet_from(self, tick: int) -> int:
        """The tick up to which the next ticks would do nothing unless frames or conditions come."""
        settled = self.claim.state is not ClaimState.CLAIMING
        if (not settled or self._waiting or self.sender.busy or self.reassembler.busy
                or self.dtcs.active()):
            return tick + 1
        return self._dm1.next_due if self.config.claim else 1 << 62

    def status_text(self) -> str:
        state = self.claim.state
        where = f"SA 0x{self.claim.address:02X}" + ("" if state is ClaimState.OFF else f" {state.value}")
        text = f"J1939 {where} | DTC {len(self.dtcs.active())} active"
        if self.claim.lost:
            text += f" | claims lost {self.claim.lost}"
        if self.conflicts:
            text += f" | address conflicts {self.conflicts}"
        if self.violations:
            text += f" | address violations {self.violations}"
        return text

    def _tick_dm1(self, tick: int) -> None:
        if not self.config.claim:
            return
        dm1 = self._dm1
        if dm1.due(tick):
            dm1.restart(tick + dm1.every)  # the next interval counts from this DM1, however late it went
            self._answer(DM1_PGN, self.dtcs.dm1(), GLOBAL_ADDRESS, own=True)

    def _handle(self, frame: Received, tick: int, out: list[Pdu]) -> None:
        if frame.pgn == ADDRESS_CLAIMED_PGN and len(frame.data) >= SINGLE_FRAME:
            self.claim.on_claim(frame.source, Name.from_bytes(frame.data), tick, out)
        elif frame.pgn == REQUEST_PGN:
            self._on_request(frame, out)
        elif frame.pgn == TP_CM_PGN and len(frame.data) >= SINGLE_FRAME:
            try:
                values = layouts.decode(layouts.TP_CM, frame.data)
            except ValueError:
                return
            self.sender.on_cm(frame, values, tick, out)
            self.reassembler.on_cm(frame, values, self.claim.address, tick, out)
        elif frame.pgn == TP_DT_PGN:
            whole = self.reassembler.on_dt(frame, tick, out)
            if whole is not None and whole.pgn == REQUEST_PGN:
                self._on_request(whole, out)
            elif whole is not None and self._on_message is not None:
                self._on_message(whole)

    def _on_request(self, frame: Received, out: list[Pdu]) -> None:
        pgn = requested_pgn(frame)
        if pgn is None:
            return
        addressed = frame.destination != GLOBAL_ADDRESS
        reply_to = frame.source if addressed else GLOBAL_ADDRESS
        if pgn == ADDRESS_CLAIMED_PGN:
            self.claim.on_request(out)
            return
        if self.claim.state is ClaimState.CANNOT_CLAIM:
            return
        payload = self._payload(pgn)
        if pgn == DM11_PGN:
            self.dtcs.clear_active()
            self.cleared += 1
            if addressed:
                self._waiting.append(acknowledgement(ACK, pgn, frame.source))
        elif payload is not None:
            self.answered += 1
            self._answer(pgn, payload, reply_to)
        elif addressed:
            self.nacked += 1
            self._waiting.append(acknowledgement(NACK, pgn, frame.source))

    def _payload(self, pgn: int) -> bytes | None:
        if pgn == DM1_PGN:
            return self.dtcs.dm1()
        if pgn == DM2_PGN:
            return self.dtcs.dm2()
        if pgn in self._ids:
            return self._ids[pgn]
        latest = self._periodic.get(pgn)
        return None if latest is None else latest()

    def _answer(self, pgn: int, payload: bytes, destination: int, own: bool = False) -> None:
        """Queue an answer or own message; the same frame asked for twice in one tick goes once."""
        if len(payload) <= SINGLE_FRAME:
            pdu = single_frame(pgn, payload, destination)
            if pdu not in self._waiting:
                self._waiting.append(pdu)
        else:
            self.sender.send(pgn, payload, destination, own)
