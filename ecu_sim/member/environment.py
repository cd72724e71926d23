"""What every part of a node is built with, as one value: where it sends, what its DBC says, its
``[j1939]`` settings, the tick's length and how its frames are made.

These five went together, one by one, through the signatures of the member, the powertrain and
the restbus; as one record a builder names what it needs once, and a new thing every part needs
(a diagnostic layer's settings) is added in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import FrameFactory, new_message
from ecu_sim.codec.profile import Profile
from ecu_sim.settings.model import J1939Settings


@dataclass(frozen=True)
class NodeEnvironment:
    """The port a node's parts send and hear on, the profile (its DBC), its ``[j1939]`` settings,
    the loop's period and the factory of its frames."""

    port: Port
    profile: Profile
    settings: J1939Settings
    period_s: float
    new_frame: FrameFactory = new_message
