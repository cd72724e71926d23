"""The counter and checksum fields of a command message, found in the DBC by their SPNs.

TSC1 (SPN 4206 counter, 4207 checksum) and XBR (SPN 3189 counter, 3188 checksum) carry J1939-71's
integrity fields; where they lie is the DBC's to say, so a node or a controller asks here for the
message's :class:`~ecu_sim.j1939.checksum.Integrity` rather than knowing a byte position.
"""

from __future__ import annotations

from typing import Final

from cantools.database.can import Message

from ecu_sim.codec.spn import SignalLayout
from ecu_sim.j1939.checksum import Integrity

#: (counter SPN, checksum SPN) -> the rule that folds the sum into the checksum
TSC1_SPNS: Final = (4206, 4207)
XBR_SPNS: Final = (3189, 3188)


def integrity_of(message: Message) -> Integrity | None:
    """The message's counter and checksum rule, or None when it has no such pair of signals."""
    layouts = [SignalLayout.of(signal) for signal in message.signals]
    fields = {layout.spn: layout.bits for layout in layouts if layout.is_little_endian}
    for spns, build in ((TSC1_SPNS, Integrity.tsc1), (XBR_SPNS, Integrity.xbr)):
        counter, checksum = fields.get(spns[0]), fields.get(spns[1])
        if counter is not None and checksum is not None:
            return build(counter, checksum)
    return None
