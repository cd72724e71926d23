"""``--network powertrain``: which DBC nodes the ECU process hosts, and what their messages carry.

The class6 truck's engine, transmission, brakes and engine retarder each become a J1939 node of
their own. Which DBC node plays which part is read from the DBC: the node's J1939 function
(``NmJ1939Function``) when it sets one, else its address (``NmStationAddress``), matched
against the J1939 function codes and preferred addresses of the four (SAE J1939 base document,
tables of industry group 0 functions and of preferred addresses). The engine is the ECU's own
node. Each node sends the DBC messages it is the sender of, filled from :class:`Readings` by
the J1939 SPN of each signal (the same mechanism as the single node's engine messages,
:mod:`ecu_sim.powertrain.engine_frames`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NamedTuple

from cantools.database.can import Database

from ecu_sim.codec.nm import node_attributes

#: the powertrain's base tick: J1939-71's fastest rates (EEC1, ETC1) are 10 ms
BASE_TICK_S: Final = 0.01


@dataclass(frozen=True)
class Part:
    """One of the four: its J1939 function and the address J1939 prefers for it."""

    role: str
    function: int
    preferred_address: int


#: J1939 function codes (industry group 0) and preferred addresses of the hosted nodes
PARTS: Final = (
    Part("engine", 0, 0x00),
    Part("transmission", 3, 0x03),
    Part("brakes", 9, 0x0B),
    Part("retarder", 12, 0x0F),
)


@dataclass(frozen=True)
class Member:
    """A hosted node: its part, its DBC node name and the address it claims."""

    part: Part
    node: str
    address: int

    @property
    def role(self) -> str:
        return self.part.role


def members(database: Database) -> dict[str, Member]:
    """The DBC's node for each part, by role; a part without a node is absent."""
    found: dict[str, Member] = {}
    sending = {sender for message in database.messages for sender in (message.senders or ())}
    for node in database.nodes:
        if node.name not in sending:
            continue
        attributes = node_attributes(database, [node.name])
        address = attributes.get("address")
        if address is None:
            continue
        function = attributes.get("function")
        for part in PARTS:
            if part.role in found:
                continue
            if (part.function == function) if function is not None else (part.preferred_address == address):
                found[part.role] = Member(part, node.name, address)
                break
    return found


def missing(database: Database) -> str:
    """The preferred addresses of the parts the DBC has no node for, e.g. ``0x0B, 0x0F``; empty
    when it has all four."""
    found = members(database)
    return ", ".join(f"0x{p.preferred_address:02X} ({p.role})" for p in PARTS if p.role not in found)


class Readings(NamedTuple):
    """What the powertrain reports on the wire at a tick; NaN is sent as "not available".

    It begins with every field of :class:`ecu_sim.vehicle.drive.Driveline`, in its order (the
    single node's engine messages read them by the same SPNs), the torques indicated as J1939
    counts them; then what changes from tick to tick; from :data:`FIRST_CONSTANT` on, what the
    truck's build fixes (EC1's engine map, switches it does not have), filled in once.
    """

    gear: float
    selected: float
    engine_rpm: float
    engine_pct: float
    demand_pct: float
    fuel_rate_lph: float
    fuel_used_l: float
    fuel_economy_kml: float
    average_economy_kml: float
    torque_mode: float
    controlling_address: float
    engine_demand_pct: float
    app_pct: float
    load_pct: float
    friction_pct: float
    cruise_active: float
    cruise_enable: float
    brake_switch: float
    cruise_state: float
    output_shaft_rpm: float
    input_shaft_rpm: float
    shift_in_process: float
    lockup_engaged: float
    driveline_engaged: float
    gear_ratio: float
    brake_pedal_pct: float
    ebs_brake_switch: float
    front_axle_kph: float
    xbr_state: float
    xbr_mode: float
    xbr_limit_mps2: float
    brake_controller: float
    foundation_brake_use: float
    retarder_selection_pct: float
    retarder_pct: float
    retarder_mode: float
    retarder_intended_pct: float
    retarder_controller: float
    retarder_max_pct: float
    accel_mps2: float
    reference_nm: float
    idle_rpm: float
    idle_torque_pct: float
    high_idle_rpm: float
    point2_rpm: float
    point2_pct: float
    point3_rpm: float
    point3_pct: float
    point4_rpm: float
    point4_pct: float
    point5_rpm: float
    point5_pct: float
    inertia_kg_m2: float
    default_limit_nm: float
    clutch_switch: float
    set_speed_kph: float
    parking_brake: float
    relative_speed_kph: float
    retarder_idle_rpm: float
    retarder_idle_pct: float
    retarder_max_rpm: float
    retarder_max_rpm_pct: float
    retarder_point3_rpm: float
    retarder_point3_pct: float
    retarder_point4_rpm: float
    retarder_point4_pct: float
    retarder_peak_rpm: float
    retarder_peak_pct: float
    retarder_reference_nm: float


#: the index of the first field that never changes during a run
FIRST_CONSTANT: Final = Readings._fields.index("reference_nm")


_SPN_NAMES: Final = {
    523: "gear", 524: "selected", 190: "engine_rpm", 513: "engine_pct", 512: "demand_pct",
    183: "fuel_rate_lph", 184: "fuel_economy_kml", 185: "average_economy_kml", 182: "fuel_used_l",
    250: "fuel_used_l",
    899: "torque_mode", 1483: "controlling_address", 2432: "engine_demand_pct",
    91: "app_pct", 92: "load_pct", 514: "friction_pct",
    544: "reference_nm", 188: "idle_rpm", 539: "idle_torque_pct", 532: "high_idle_rpm",
    528: "point2_rpm", 540: "point2_pct", 529: "point3_rpm", 541: "point3_pct",
    530: "point4_rpm", 542: "point4_pct", 531: "point5_rpm", 543: "point5_pct",
    1794: "inertia_kg_m2", 1846: "default_limit_nm",
    595: "cruise_active", 596: "cruise_enable", 597: "brake_switch", 598: "clutch_switch",
    86: "set_speed_kph", 527: "cruise_state", 70: "parking_brake",
    191: "output_shaft_rpm", 161: "input_shaft_rpm", 574: "shift_in_process",
    573: "lockup_engaged", 560: "driveline_engaged", 526: "gear_ratio",
    521: "brake_pedal_pct", 1121: "ebs_brake_switch", 904: "front_axle_kph",
    905: "relative_speed_kph", 906: "relative_speed_kph", 907: "relative_speed_kph",
    908: "relative_speed_kph", 909: "relative_speed_kph", 910: "relative_speed_kph",
    2917: "xbr_state", 2918: "xbr_mode", 2921: "xbr_limit_mps2",
    520: "retarder_pct", 900: "retarder_mode", 1085: "retarder_intended_pct",
    1480: "retarder_controller", 1717: "retarder_max_pct", 973: "retarder_selection_pct",
    1481: "brake_controller",
    2919: "foundation_brake_use",
    546: "retarder_idle_rpm", 551: "retarder_idle_pct", 548: "retarder_max_rpm", 552: "retarder_max_rpm_pct",
    549: "retarder_point3_rpm", 553: "retarder_point3_pct", 550: "retarder_point4_rpm",
    554: "retarder_point4_pct", 547: "retarder_peak_rpm", 555: "retarder_peak_pct",
    556: "retarder_reference_nm",
}
#: SPN -> the field of :class:`Readings` it carries
SPN_FIELDS: Final = {spn: Readings._fields.index(name) for spn, name in _SPN_NAMES.items()}
