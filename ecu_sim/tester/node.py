"""The scripted tester as a node of a virtual-time loop: a foreign party on the bus, as the
attacker is, so what it sends reaches the truck's nodes as received frames, and a recording of
them holds the requests as inputs (its replay needs no tester).

Placed after the truck's nodes in the loop, it hears a tick's answers before it sends, and the
node takes a request at its next tick: the order is fixed, so the same script gives the same
frames bit for bit. What came of each request goes to the log (one line each) and, when asked,
to a CSV file a person can read: ``line,step,sent_s,request,answer_s,answer`` (the request and
the answer in hex, ``answer`` empty when none came in time).
"""

from __future__ import annotations

import csv
from typing import IO, Final

import can

from ecu_sim.bus.port import Port
from ecu_sim.tester.session import ScriptedSession, StepRecord

ANSWERS_HEADER: Final = ("line", "step", "sent_s", "request", "answer_s", "answer")


class TesterNode:
    """Sends the session's frames through ``port`` each tick; writes its rows to ``answers``."""

    def __init__(self, port: Port, session: ScriptedSession, answers: IO[str] | None = None) -> None:
        self.port = port
        self.session = session
        self.tick_count = 0
        self._written = 0
        self._answers = None if answers is None else csv.writer(answers, lineterminator="\n")
        if self._answers is not None:
            self._answers.writerow(ANSWERS_HEADER)

    def poll(self, timeout_s: float) -> None:
        self._take(self.port.recv(timeout_s))

    def drain(self) -> None:
        recv = self.port.recv
        while self._take(recv(0.0)):
            pass

    def prepare(self) -> None:
        """Nothing ahead: a request goes when the answer before it was taken."""

    def tick(self, deadline: float, transmit: bool) -> None:
        k = self.tick_count
        self.tick_count += 1
        send = self.port.send
        for can_id, data in self.session.tick(k):
            if transmit:
                send(can.Message(arbitration_id=can_id, data=data, is_extended_id=True))
        if self._answers is not None:
            rows = self.session.rows
            for row in rows[self._written:]:
                self._answers.writerow(answer_row(row))
            self._written = len(rows)

    def _take(self, msg: can.Message | None) -> bool:
        if msg is None:
            return False
        if msg.is_extended_id and not msg.is_error_frame:
            self.session.receive(msg.arbitration_id, msg.data)
        return True


def answer_row(row: StepRecord) -> tuple[object, ...]:
    """A row of the answers' file."""
    return (row.line, row.step, f"{row.sent_s:.6g}", row.request.hex().upper(), f"{row.answer_s:.6g}",
            "" if row.answer is None else row.answer.hex().upper())
