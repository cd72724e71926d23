"""The identifiers a node's frames carry: the DBC's, or under the J1939 address the node claims.

A node that is given an address (``[j1939] address``, ``--address``) sends its J1939 messages from
it, as the address it claims is the one its frames carry; the driver always sends from its own
address, so its frames can be told apart from the cruise control's.
"""

from __future__ import annotations

from cantools.database.can import Message as CanMessage

from ecu_sim.codec.profile import Profile
from ecu_sim.codec.role import RoleCodec
from ecu_sim.codec.spn import first_carrier
from ecu_sim.errors import ConfigError
from ecu_sim.j1939.ids import from_source
from ecu_sim.settings.model import Settings


def spn_codec(profile: Profile, spn: int) -> RoleCodec | None:
    """A codec for the DBC's signal with J1939 ``spn`` (its first), or None when the DBC has none."""
    found = first_carrier(profile.database, spn)
    if found is None:
        return None
    return RoleCodec(found.message, found.signal, is_j1939=profile.speed.is_j1939)


def own_id(codec: RoleCodec, settings: Settings) -> int:
    """``codec``'s identifier as the node sends it: from ``[j1939] address`` / ``--address`` when
    given (the address it claims is the one its frames carry), else as the DBC has it."""
    address = settings.j1939.address
    return codec.frame_id if address is None or not codec.is_j1939 else sent_from(codec, address)


def own_message_id(message: CanMessage, settings: Settings) -> int:
    """A DBC message's identifier as the node sends it: a 29-bit one from ``--address`` when given."""
    address = settings.j1939.address
    if address is None or not message.is_extended_frame:
        return int(message.frame_id)
    return from_source(message.frame_id, address)


def sent_from(codec: RoleCodec, source: int) -> int:
    """``codec``'s identifier sent from ``source``; the driver needs its own address to be told apart."""
    if not codec.is_j1939:
        raise ConfigError(f"the driver sends {codec.message_name} under its own J1939 source address, "
                          "but that message is not a J1939 parameter group in the DBC "
                          '(BA_ "VFrameFormat" ... 3 or BA_ "ProtocolType" "J1939")')
    return from_source(codec.frame_id, source)
