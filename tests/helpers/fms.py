"""What the FMS tests share: the FMS set's DBC as cantools reads it, and a tape of the frames the
ECU's port sends."""

from __future__ import annotations

import can
import cantools
from cantools.database.can import Database

from ecu_sim.bus.listener import Direction
from tests.conftest import REPO


def fms_dbc() -> Database:
    """dbc/fms.dbc, loaded by cantools alone."""
    database = cantools.database.load_file(str(REPO / "dbc" / "fms.dbc"))
    assert isinstance(database, Database)
    return database


class Tape:
    """Every frame the ECU's port sends, with the tick it went at."""

    def __init__(self) -> None:
        self.frames: list[tuple[int, can.Message]] = []
        self.tick = 0

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.SENT:
            self.frames.append((self.tick, msg))

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        self.tick = tick + 1
