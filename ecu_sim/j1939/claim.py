"""Address claim (J1939-81): take the preferred address, defend it, and give it up to a lower NAME.

A node claims at its first tick and sends nothing else until the claim delay has passed
(:data:`ecu_sim.j1939.timing.CLAIM_DELAY_S`, rounded up to whole ticks). When another node claims
the same address, the NAMEs decide: the lower keeps it and re-sends its claim; the loser, if it is
arbitrary-address capable, claims the first free address of the self-configurable range, else it
sends Cannot Claim from the null address and falls silent. A request for Address Claimed is
answered with the current claim (or Cannot Claim) at the next tick.
"""

from __future__ import annotations

import enum
import logging
from typing import Final

from ecu_sim.j1939.frames import ADDRESS_CLAIMED_PGN, Pdu
from ecu_sim.j1939.ids import GLOBAL_ADDRESS, NULL_ADDRESS
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.timing import CLAIM_DELAY_S, at_least

log = logging.getLogger(__name__)

#: J1939-81's self-configurable addresses, where an arbitrary-address-capable loser looks
ARBITRARY_RANGE: Final = range(128, 248)


class ClaimState(enum.Enum):
    """Where the claim stands; ``OFF`` is a node that uses its address without claiming it."""

    OFF = "off"
    CLAIMING = "claiming"
    CLAIMED = "claimed"
    CANNOT_CLAIM = "cannot claim"


class AddressClaim:
    """One node's claim: its NAME, its address now, and what the other claimants said."""

    def __init__(self, name: Name, preferred: int, period_s: float, enabled: bool = True) -> None:
        if not 0 <= preferred < NULL_ADDRESS:
            raise ValueError(f"a preferred address is 0..253, got {preferred}")
        self.name = name
        #: packed once, before the loop runs: the claim tick must not be the one that loads the DBC
        self._claimed_data = name.to_bytes()
        self.address = preferred
        self.state = ClaimState.CLAIMING if enabled else ClaimState.OFF
        self._delay = at_least(CLAIM_DELAY_S, period_s)
        self._ready_tick = 0
        self._started = False
        #: the addresses others claimed, with their NAMEs: the bus as this node heard it
        self.others: dict[int, Name] = {}
        #: contentions this node lost (to a lower NAME)
        self.lost = 0

    def tick(self, tick: int, out: list[Pdu]) -> None:
        """Claim at the first tick; after the delay the claim stands."""
        if self.state is ClaimState.OFF:
            return
        if not self._started:
            self._started = True
            self._claim(tick, out)
        elif self.state is ClaimState.CLAIMING and tick >= self._ready_tick:
            self.state = ClaimState.CLAIMED

    @property
    def delay_ticks(self) -> int:
        """The ticks between the claim and the node's first other frame (0 when it claims nothing):
        a peer that starts with this node is silent that long, so its silence is no fault yet."""
        return 0 if self.state is ClaimState.OFF else self._delay

    def may_send(self, tick: int | None = None) -> bool:
        """Whether the node may send its other traffic (at ``tick``, before this tick's :meth:`tick`):
        claimed and past the delay, or not claiming."""
        if self.state is ClaimState.CLAIMING and tick is not None and self._started:
            return tick >= self._ready_tick
        return self.state in (ClaimState.CLAIMED, ClaimState.OFF)

    @property
    def current_address(self) -> int:
        """The address frames go out from: the null address once the node could not claim."""
        return NULL_ADDRESS if self.state is ClaimState.CANNOT_CLAIM else self.address

    def on_request(self, out: list[Pdu]) -> None:
        """Someone asked who is where: answer with the claim, or with Cannot Claim."""
        if self.state is ClaimState.CANNOT_CLAIM:
            out.append(self._claimed(NULL_ADDRESS))
        elif self._started or self.state is ClaimState.OFF:
            out.append(self._claimed(self.address))

    def on_claim(self, source: int, name: Name, tick: int, out: list[Pdu]) -> None:
        """Another node's Address Claimed (or Cannot Claim, from the null address)."""
        if source >= NULL_ADDRESS or name == self.name:
            return
        self.others[source] = name
        if source != self.address or self.state in (ClaimState.OFF, ClaimState.CANNOT_CLAIM):
            return
        if self.name.wins_against(name):
            out.append(self._claimed(self.address))
            return
        self.lost += 1
        free = self._free_address()
        if self.name.arbitrary_address_capable and free is not None:
            log.warning("address 0x%02X lost to NAME %s; claiming 0x%02X instead", self.address, name, free)
            self.address = free
            self.state = ClaimState.CLAIMING
            self._claim(tick, out)
            return
        log.warning("address 0x%02X lost to NAME %s and no other address can be claimed: sending "
                    "Cannot Claim and falling silent", self.address, name)
        self.state = ClaimState.CANNOT_CLAIM
        out.append(self._claimed(NULL_ADDRESS))

    def _claim(self, tick: int, out: list[Pdu]) -> None:
        self._ready_tick = tick + self._delay
        out.append(self._claimed(self.address))

    def _claimed(self, source: int) -> Pdu:
        return Pdu(ADDRESS_CLAIMED_PGN, self._claimed_data, GLOBAL_ADDRESS, 6, source)

    def _free_address(self) -> int | None:
        return next((a for a in ARBITRARY_RANGE if a not in self.others and a != self.address), None)



