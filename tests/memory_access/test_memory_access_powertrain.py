"""Memory access on the powertrain's nodes in virtual time: each answers on its own address, and a
write of the engine's road speed limit governs the truck after "operation completed"."""

from __future__ import annotations

import itertools
import struct
import zlib

import can

from ecu_sim.calibration.layout import HEADER_SIZE, INTEGRITY_SIZE
from ecu_sim.j1939.dm19 import DM19_PGN, parse_dm19
from ecu_sim.memory_access.messages import DM15_PGN, Command, Dm14, Error, Status, decode_dm15, encode_dm14
from ecu_sim.nodes.calibrated import builtin_image
from tests.helpers.dm14tool import Dm14Tool, spatial_writes
from tests.helpers.powertrainrig import CONTROLLER, global_request, rig, settings
from tests.powertrain.test_fms_vin import BAM, reassembled
from tests.powertrain.test_powertrain_reflash import drive, standing

NODES = (0x00, 0x03, 0x0B, 0x0F)
LIMIT_KPH = 30.0
EEC1_PGN = 61444


def read_request(node: int) -> can.Message:
    data = encode_dm14(Dm14(4, True, Command.READ, 0, 0, 1))
    return can.Message(arbitration_id=0x18D90000 | node << 8 | CONTROLLER, data=data, is_extended_id=True)


def test_every_node_of_the_powertrain_answers_a_dm14_with_a_seed_on_its_own_address() -> None:
    done = rig(lambda tick: [read_request(node) for node in NODES] if tick == 50 else [], settings())
    done.run(60)
    answers = {h.source: decode_dm15(bytes(h.msg.data)) for h in done.controller.heard
               if h.pgn == DM15_PGN and h.msg.arbitration_id & 0xFF00 == CONTROLLER << 8}
    assert sorted(answers) == list(NODES)
    assert all(status is Status.PROCEED for status, *_ in answers.values())


def test_a_dm14_write_of_the_engines_limit_governs_the_truck_after_operation_completed() -> None:
    tool = limit_write(start=100)
    # drive() takes any script with ``done`` and ``controller``, as the UDS flasher has them
    done, speeds = drive(standing(), tool, 6000,  # type: ignore[arg-type]
                         extra=lambda k: [global_request(DM19_PGN)] if k == 5800 else [])
    assert tool.done and tool.refused is None
    assert max(speeds) <= LIMIT_KPH and max(speeds) > LIMIT_KPH - 3.0
    got = dict(reassembled([h.msg for h in done.controller.heard if h.tick >= 5800], 0x00, BAM))
    (cvn, _), = parse_dm19(got[DM19_PGN])
    assert cvn == zlib.crc32(written_image())


def test_a_dm14_write_while_the_truck_moves_is_refused_with_0x1007() -> None:
    tool = Dm14Tool(0x00, spatial_writes(0, bytes(7)), start=50)
    drive(settings(initial_speed=60.0), tool, 200)  # type: ignore[arg-type]
    assert tool.refused is not None
    assert tool.refused[:3] == (Status.OPERATION_FAILED, 0, Error.VEHICLE_MOVING)


def written_image() -> bytes:
    """The engine's built-in image with the lower limit and its integrity field."""
    image = bytearray(builtin_image("engine", settings()).data)
    image[HEADER_SIZE:HEADER_SIZE + 8] = struct.pack("<d", LIMIT_KPH)
    image[-INTEGRITY_SIZE:] = struct.pack("<I", zlib.adler32(bytes(image[:-INTEGRITY_SIZE])))
    return bytes(image)


def limit_write(start: int) -> Dm14Tool:
    """The limit's eight bytes (one frame carries seven) and then the integrity field."""
    image = written_image()
    integrity = len(image) - INTEGRITY_SIZE - HEADER_SIZE
    return Dm14Tool(0x00, spatial_writes(0, image[HEADER_SIZE:HEADER_SIZE + 8])
                    + spatial_writes(integrity, image[-INTEGRITY_SIZE:]), start=start)


def test_the_engines_eec1_keeps_its_period_throughout_a_memory_access_session() -> None:
    tool = limit_write(start=50)
    done, _ = drive(standing(), tool, 300)  # type: ignore[arg-type]
    assert tool.done
    ticks = [h.tick for h in done.controller.from_address(0x00, EEC1_PGN) if 50 <= h.tick <= 250]
    assert ticks and max(b - a for a, b in itertools.pairwise(ticks)) == 2


def test_the_same_memory_access_session_gives_the_same_bytes_twice() -> None:
    runs = []
    for _ in range(2):
        done, _ = drive(standing(), limit_write(start=50), 300)  # type: ignore[arg-type]
        runs.append([(h.tick, h.msg.arbitration_id, bytes(h.msg.data)) for h in done.controller.heard])
    assert runs[0] == runs[1]
