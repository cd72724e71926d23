"""Each node kind's application restarts from its memory's active image: built again whole, with
what a tester wrote by identifier, at ECUReset (in virtual time, on the in-process bus)."""

from __future__ import annotations

import struct

from ecu_sim.bus.inprocess import InProcessLink, new_frame
from ecu_sim.bus.port import Port
from ecu_sim.nodes.factory import NodeKind, build_node, ccm_of
from ecu_sim.runs.prepare import prepare
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.settings.model import ProfileSettings, Settings

KP_DID = 0x0100


def test_the_ccm_runs_the_gain_written_by_identifier_from_the_next_reset_on() -> None:
    ready, profile = prepare(Settings(profile=ProfileSettings(name="j1939")))
    link = InProcessLink(VirtualClock(), "ccm-restart")
    kind = NodeKind.CCM
    ccm = ccm_of(build_node(kind, Port(link.bus(), kind.frame_ids(profile, ready)), profile, ready,
                            new_frame=new_frame))
    try:
        assert ccm.network is not None and ccm.network.side is not None
        side, built_in = ccm.network.side, ccm.params.kp
        parameters = side.parameters
        assert parameters is not None and parameters.write(KP_DID, struct.pack("<d", 35.0)) is None
        assert ccm.params.kp == built_in != 35.0
        side.reset(1)
        assert ccm.params.kp == 35.0 and side.memory is not None
        assert side.identification[0xF1A0] == side.memory.cvn.to_bytes(4, "big")
    finally:
        ccm.port.close()
