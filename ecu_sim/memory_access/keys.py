"""DM15's seed and DM14's key: sixteen bits each, on the UDS server's own security mechanism.

The seeds, the attempt counter and the delay are :class:`~ecu_sim.uds.security.Security`'s, with
a state of their own kept beside the UDS one, so a seed never repeats its counter after a
restart and a lock-out survives one. DM15 carries two bytes of seed: it is the first two bytes
of the four-byte seed (big-endian), and a seed whose two bytes have a meaning of their own
(0x0000, 0x0001, 0xFFFF) is passed over. The key is the configured key algorithm applied to
those two bytes and the session's user level; its last two bytes, big-endian, are the key. A
tool computes it from what it sees on the bus alone. Two bytes are what J1939-73 gives: a seed
of sixteen bits repeats by chance (every value the counter gives is new, not every value two of
its bytes give), which is the protocol's weakness, not hidden here.
"""

from __future__ import annotations

from collections.abc import Callable

from ecu_sim.memory_access.messages import MEANINGFUL_SEEDS, Error
from ecu_sim.uds.codes import Nrc
from ecu_sim.uds.security import KeyAlgorithm, Security, SecurityStore

#: the Security's refusals and DM15's error indicator for each
_REFUSALS = {Nrc.INVALID_KEY: Error.INVALID_KEY, Nrc.REQUEST_SEQUENCE_ERROR: Error.INVALID_KEY,
             Nrc.EXCEED_NUMBER_OF_ATTEMPTS: Error.SECURITY_GENERAL,
             Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED: Error.SECURITY_GENERAL}


def key_of(algorithm: KeyAlgorithm, seed: int, level: int) -> int:
    """The 16-bit key of a 16-bit seed at ``level``: what the tool computes as well."""
    return int.from_bytes(algorithm(seed.to_bytes(2, "big"), level)[-2:], "big")


class MemoryKeys:
    """Seeds and keys of one node's memory access."""

    def __init__(self, identity: bytes, store: SecurityStore, algorithm: KeyAlgorithm,
                 attempts: int, delay_ticks: int) -> None:
        self._algorithm = algorithm
        self._level = 0
        expected: Callable[[bytes, int], bytes] = self._expected
        self.security = Security(identity, store, expected, attempts, delay_ticks)

    def _expected(self, seed: bytes, _level: int) -> bytes:
        """The key Security compares with: the one of the seed's two DM15 bytes at the session's level."""
        return key_of(self._algorithm, int.from_bytes(seed[:2], "big"), self._level).to_bytes(2, "big")

    def seed(self, level: int, tick: int) -> int | Error:
        """A new seed for a session at ``level``, or why none is given (a lock-out's delay)."""
        self.security.lock()
        self._level = level
        while True:
            seed = self.security.request_seed(tick)
            if isinstance(seed, Nrc):
                return _REFUSALS.get(seed, Error.SECURITY_GENERAL)
            value = int.from_bytes(seed[:2], "big")
            if value not in MEANINGFUL_SEEDS:
                return value

    def check(self, key: int, tick: int) -> Error | None:
        """None: the key fits the last seed; else DM15's error indicator. Either way the seed is spent."""
        refusal = self.security.send_key(key.to_bytes(2, "big"), tick)
        self.security.lock()
        if refusal is None:
            return None
        return _REFUSALS.get(refusal, Error.SECURITY_GENERAL)

    @property
    def failures(self) -> int:
        return self.security.state.failures
