"""What a DBC says about a node as a J1939 network member: its address and its NAME fields.

Vector-style J1939 DBCs give each node (``BU_``) its address as ``NmStationAddress`` and its NAME
fields as ``NmJ1939*`` attributes. A node is the sender of the message it transmits; a DBC that
says nothing leaves the choice to the settings and ecu-sim's defaults.
"""

from __future__ import annotations

from typing import Final

from cantools.database.can import Database

#: DBC node attribute -> field of ecu_sim.settings.model.J1939Settings
NAME_ATTRIBUTES: Final = {
    "NmJ1939IdentityNumber": "identity_number",
    "NmJ1939ManufacturerCode": "manufacturer_code",
    "NmJ1939Function": "function",
    "NmJ1939FunctionInstance": "function_instance",
    "NmJ1939ECUInstance": "ecu_instance",
    "NmJ1939System": "vehicle_system",
    "NmJ1939SystemInstance": "vehicle_system_instance",
    "NmJ1939IndustryGroup": "industry_group",
    "NmJ1939AAC": "arbitrary_address_capable",
}
STATION_ADDRESS: Final = "NmStationAddress"


def node_attributes(database: Database, senders: list[str]) -> dict[str, int]:
    """The J1939 attributes of the first sender node that has any: ``address`` and NAME fields.

    Only values the DBC sets for the node count; a default of the attribute definition (254 for
    ``NmStationAddress``, "no address") does not.
    """
    for node in database.nodes:
        if node.name not in senders or node.dbc is None:
            continue
        given = {name: attr.value for name, attr in node.dbc.attributes.items()}
        found = {field: int(given[name]) for name, field in NAME_ATTRIBUTES.items() if name in given}
        address = given.get(STATION_ADDRESS)
        if address is not None and 0 <= int(address) <= 253:
            found["address"] = int(address)
        if found:
            return found
    return {}
