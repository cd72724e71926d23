"""What the FMS tests share: the FMS set's DBC as cantools reads it, a tape of the frames the
ECU's port sends, and a simulation run with that tape."""

from __future__ import annotations

import can
import cantools
from cantools.database.can import Database

from ecu_sim.bus.listener import Direction
from ecu_sim.runs.simulation import DriverSetup, Simulation
from ecu_sim.settings.model import Settings
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


def sent_frames(settings: Settings) -> list[tuple[int, can.Message]]:
    """The frames the ECU's port sent in a simulation of ``settings`` with the CCM driving, each
    with its tick."""
    tape = Tape()

    def watch(simulation: Simulation) -> list[Tape]:
        simulation.ecu.port.add_listener(tape)
        return [tape]

    with Simulation(settings, DriverSetup("ccm"), link="direct", watch=watch) as simulation:
        simulation.run()
    return tape.frames
