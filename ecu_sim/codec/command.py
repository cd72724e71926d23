"""The codec of a command message: every signal a controller sets, a message counter and a checksum.

A command such as TSC1 or XBR is more than one role signal: a mode, a priority, a demand, and a
counter and checksum the receiver checks before it acts. The signals are found in the DBC by
their J1939 SPNs (ecu_sim.codec.spn) and each is encoded by the project's fast role codec (tested
against cantools), which leaves every bit outside its signal at 1 (J1939's "not available"); the
message is the bitwise AND of the signals' payloads, as the engine's messages are
(ecu_sim.powertrain.engine_frames).
The checksum covers the identifier the frame is sent with, so the codec is built for one sender:
the DBC's identifier re-addressed to the sender's source address.
"""

from __future__ import annotations

from collections.abc import Mapping

from cantools.database.can import Message

from ecu_sim.codec.integrity import TSC1_SPNS, XBR_SPNS, integrity_of
from ecu_sim.codec.role import RoleCodec
from ecu_sim.codec.spn import spn_signals
from ecu_sim.j1939.ids import from_source, is_pdu1, make_id, pgn_of, priority_of

#: sets of fixed fields kept encoded: a controller has a few (engaged, released)
_FIXED_MAX = 16


class CommandCodec:
    """Encoder of one command message from one source address: values by SPN, then the counter and
    checksum J1939-71 gives it (ecu_sim.codec.integrity).

    The fields that stay the same from frame to frame (modes, priority, rate, purpose) are kept
    encoded by their values, so a tick encodes only what changed.
    """

    def __init__(self, message: Message, source: int, destination: int | None = None) -> None:
        """``ValueError`` when the message lacks its counter and checksum signals. ``destination``
        addresses a PDU1 command to another node than the DBC's, as an attacker aims one."""
        integrity = integrity_of(message)
        if integrity is None:
            raise ValueError(f"{message.name} has no message counter and checksum (signals with SPNs "
                             f"{TSC1_SPNS} or {XBR_SPNS})")
        self.message = message
        self.integrity = integrity
        #: how many counter values the sequence runs through (TSC1 8, XBR 16)
        self.modulus = integrity.modulus
        self.frame_id = from_source(message.frame_id, source)
        if destination is not None:
            pgn = pgn_of(self.frame_id)
            if not is_pdu1(pgn):
                raise ValueError(f"{message.name} is broadcast (PGN {pgn:#06x}): it has no destination")
            self.frame_id = make_id(pgn, source, destination, priority_of(self.frame_id))
        self.is_extended_id: bool = message.is_extended_frame
        # Not as J1939 parameters: a command's two-bit modes use every value (10 is torque
        # control, not "error"), so only the DBC's limits bound what is encoded.
        integrity_spns = (*TSC1_SPNS, *XBR_SPNS)
        self._codecs = {spn: RoleCodec(message, signal, is_j1939=False)
                        for spn, signal in spn_signals(message) if spn and spn not in integrity_spns}
        self._length = message.length
        self._fixed: dict[tuple[tuple[int, float], ...], int] = {}

    def has(self, spn: int) -> bool:
        """Whether the DBC's message carries ``spn``."""
        return spn in self._codecs

    def encode(self, fixed: Mapping[int, float], demands: Mapping[int, float], counter: int) -> bytes:
        """The frame with the ``fixed`` fields and the ``demands`` (both by SPN; any the message
        lacks are left out), ``counter`` and the checksum over them and the identifier."""
        key = tuple(sorted(fixed.items()))
        bits = self._fixed.get(key)
        if bits is None:
            bits = self._and((1 << (8 * self._length)) - 1, fixed)
            if len(self._fixed) < _FIXED_MAX:
                self._fixed[key] = bits
        bits = self._and(bits, demands)
        return self.integrity.seal(self.frame_id, bits.to_bytes(self._length, "little"), counter)

    def _and(self, bits: int, values: Mapping[int, float]) -> int:
        for spn, value in values.items():
            codec = self._codecs.get(spn)
            if codec is not None:
                bits &= int.from_bytes(codec.encode(value), "little")
        return bits
