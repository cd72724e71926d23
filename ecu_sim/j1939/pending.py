"""What the transport sender has yet to start, bounded so that no stranger can fill it.

Three queues, each keyed by PGN so that a repeat replaces the pending payload instead of adding
a copy: the node's own broadcasts (DM1, its cyclic messages over eight bytes), answers to global
requests, and answers addressed to one requester. The own broadcasts go first, so a flood of
requests delays none of them. Global answers need no limit of their own: keyed by PGN, there are
never more of them than the node has long messages. Addressed answers are keyed by requester and
PGN, and limited per requester and in total (:data:`PER_REQUESTER`, :data:`ADDRESSED`), because
requesters are 253 addresses anyone can send from. What does not fit is dropped and counted; the
first drop of an episode is logged, an episode ending after :data:`EPISODE_QUIET_S` without one.
"""

from __future__ import annotations

import logging
from collections.abc import Container
from typing import Final

from ecu_sim.j1939.timing import expired_after

log = logging.getLogger(__name__)

#: distinct PGNs one requester may have waiting beside the one in its session: a service tool
#: asks for its three identification messages at once, and one session per requester at a time
#: (J1939-21) means each waits a T3 at most when the requester stays silent, so the queue of one
#: requester empties within three T3 spans
PER_REQUESTER: Final = 2
#: addressed answers waiting in total, whoever asked: no more than :data:`SESSIONS`, so once the
#: sessions open now have ended (within T3 each when their partners stay silent) every waiting
#: answer can start but those behind one requester's own, and the queue empties within
#: 1 + :data:`PER_REQUESTER` T3 spans
ADDRESSED: Final = 4
#: connection-mode sessions the node keeps open at once (one per destination, as J1939-21 asks)
SESSIONS: Final = 4
#: a drop after this long without one starts a new episode, and a new log line
EPISODE_QUIET_S: Final = 10.0


class Pending:
    """The three queues and the count of what they refused."""

    def __init__(self, period_s: float) -> None:
        self.own: dict[int, bytes] = {}
        self.answers: dict[int, bytes] = {}
        self.addressed: dict[int, dict[int, bytes]] = {}
        #: answers refused because their requester or the node had too many waiting
        self.dropped = 0
        self._new_drops = 0
        self._quiet = expired_after(EPISODE_QUIET_S, period_s)
        self._episode_until = -1

    def __bool__(self) -> bool:
        return bool(self.own or self.answers or self.addressed)

    def broadcast(self, pgn: int, data: bytes, own: bool) -> None:
        """A message for everyone; an own broadcast also stands for a pending answer of its PGN."""
        if own:
            self.own[pgn] = data
            self.answers.pop(pgn, None)
        elif pgn not in self.own:
            self.answers[pgn] = data

    def next_broadcast(self) -> tuple[int, bytes] | None:
        """The broadcast to announce now: the oldest own one, else the oldest answer."""
        for queue in (self.own, self.answers):
            if queue:
                pgn = next(iter(queue))
                return pgn, queue.pop(pgn)
        return None

    def answer(self, pgn: int, data: bytes, destination: int) -> None:
        """An answer for one requester: replaces its pending one of the same PGN, or waits if the
        limits leave room, or is dropped."""
        waiting = self.addressed.get(destination)
        if waiting is not None and pgn in waiting:
            waiting[pgn] = data
            return
        total = sum(len(queue) for queue in self.addressed.values())
        if total >= ADDRESSED or (waiting is not None and len(waiting) >= PER_REQUESTER):
            self.dropped += 1
            self._new_drops += 1
            return
        self.addressed.setdefault(destination, {})[pgn] = data

    def next_answer(self, busy: Container[int]) -> tuple[int, int, bytes] | None:
        """(destination, PGN, data) of the oldest answer whose requester has no session open; the
        requester goes to the back of the line, so one requester cannot keep the others waiting."""
        for destination, waiting in self.addressed.items():
            if destination in busy:
                continue
            pgn = next(iter(waiting))
            data = waiting.pop(pgn)
            del self.addressed[destination]
            if waiting:
                self.addressed[destination] = waiting
            return destination, pgn, data
        return None

    def log_drops(self, tick: int) -> None:
        """Log the first drop of an episode (one line, however long the flood lasts)."""
        if not self._new_drops:
            return
        if tick >= self._episode_until:
            log.warning("too many answers waiting for transport sessions (more than %d per requester "
                        "or %d in all): dropping the newest; %d dropped so far", PER_REQUESTER, ADDRESSED,
                        self.dropped)
        self._episode_until = tick + self._quiet
        self._new_drops = 0
