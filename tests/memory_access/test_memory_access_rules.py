"""The memory access server's rules, one a test, on virtual ticks beside a real J1939 layer."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from ecu_sim.calibration.layout import AREA_START, HEADER_SIZE
from ecu_sim.calibration.memory import ProgrammableMemory
from ecu_sim.j1939.frames import TP_CM_PGN
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.memory_access.messages import DM15_PGN, DM16_PGN, Command, Dm14, Error, Status, decode_dm15
from tests.helpers.membench import OTHER_TOOL, START_IMAGE, TOOL, MemBench, direct, spatial

Frames = list[tuple[int, bytes]]
NEW_IMAGE = START_IMAGE.changed({"road_speed_limit_kph": 60.0})
PARAMETERS = NEW_IMAGE.data[HEADER_SIZE:]


def dm15s(frames: Frames) -> list[tuple[Status | int, int, int, int]]:
    return [decode_dm15(data) for can_id, data in frames if pgn_of(can_id) == DM15_PGN]


def refusal(frames: Frames) -> int:
    """The error indicator of the one DM15 in ``frames``, which must say "operation failed"."""
    (status, _, error, _), = dm15s(frames)
    assert status is Status.OPERATION_FAILED
    return error


def keyed(bench: MemBench, request: Dm14, key: int | None = None, tool: int = TOOL) -> Frames:
    """The session's first DM14, then the second with the key (the right one unless given)."""
    (status, _, _, seed), = dm15s(bench.ask(request, tool))
    assert status is Status.PROCEED
    right = bench.key(seed, request.key)
    return bench.ask(dataclasses.replace(request, key=right if key is None else key), tool)


def write_parameters(bench: MemBench, data: bytes = PARAMETERS, level: int = 4) -> Frames:
    """A whole write of the parameters and the integrity field, closed by operation completed."""
    keyed(bench, spatial(Command.WRITE, 0, len(data), level))
    sent = bench.send_long(DM16_PGN, bytes([0xFF]) + data)
    return sent + bench.ask(spatial(Command.OPERATION_COMPLETED, 0, 1, 0xFFFF))


def test_a_wrong_key_is_refused_with_0x1003_and_nothing_is_read() -> None:
    bench = MemBench()
    frames = keyed(bench, spatial(Command.READ, 0, 4, 7), key=0x1234)
    assert refusal(frames) == Error.INVALID_KEY
    assert not [f for f in frames if pgn_of(f[0]) == DM16_PGN]


def test_a_key_for_an_earlier_seed_is_an_invalid_key() -> None:
    bench = MemBench()
    (_, _, _, old_seed), = dm15s(bench.ask(spatial(Command.READ, 0, 4, 7)))
    bench.ask(spatial(Command.OPERATION_FAILED, 0, 1, 0xFFFF))  # the tool gives up that session
    assert refusal(keyed(bench, spatial(Command.READ, 0, 4, 7), key=bench.key(old_seed))) == Error.INVALID_KEY


def test_repeated_wrong_keys_lock_the_node_out_for_the_delay() -> None:
    bench = MemBench(attempts=2, delay_s=1.0)
    errors = [refusal(keyed(bench, spatial(Command.READ, 0, 4, 7), key=0)) for _ in range(3)]
    assert errors == [Error.INVALID_KEY, Error.INVALID_KEY, Error.SECURITY_GENERAL]
    assert refusal(bench.ask(spatial(Command.READ, 0, 4, 7))) == Error.SECURITY_GENERAL
    bench.run(100)
    assert dm15s(bench.ask(spatial(Command.READ, 0, 4, 7)))[0][0] is Status.PROCEED


def test_the_lock_out_survives_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "j1939-mem.json"
    bench = MemBench(attempts=0, state=state)
    assert refusal(keyed(bench, spatial(Command.READ, 0, 4, 7), key=0)) == Error.SECURITY_GENERAL
    restarted = MemBench(attempts=0, state=state)
    assert refusal(restarted.ask(spatial(Command.READ, 0, 4, 7))) == Error.SECURITY_GENERAL


def test_seeds_do_not_repeat_after_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "j1939-mem.json"
    first = dm15s(MemBench(state=state).ask(spatial(Command.READ, 0, 4, 7)))[0][3]
    again = dm15s(MemBench(state=state).ask(spatial(Command.READ, 0, 4, 7)))[0][3]
    assert first != again


def test_the_right_key_reads_the_bytes_at_a_spatial_pointer() -> None:
    bench = MemBench()
    frames = keyed(bench, spatial(Command.READ, 0, 4, 1))
    (dm16,) = [data for can_id, data in frames if pgn_of(can_id) == DM16_PGN]
    assert dm16[:5] == bytes([4]) + START_IMAGE.data[HEADER_SIZE:HEADER_SIZE + 4]
    assert [status for status, *_ in dm15s(frames)] == [Status.PROCEED, Status.OPERATION_COMPLETED]


def test_a_direct_pointer_is_the_address_with_the_extension_above_it() -> None:
    bench = MemBench()
    frames = keyed(bench, direct(Command.READ, AREA_START, 4, 1))
    (dm16,) = [data for can_id, data in frames if pgn_of(can_id) == DM16_PGN]
    assert dm16[1:5] == b"ECAL"


def test_a_long_read_goes_by_rts_cts_and_completes_after_the_data() -> None:
    bench = MemBench()
    frames = keyed(bench, direct(Command.READ, AREA_START, 256, 1))
    (rts,) = [data for can_id, data in frames if pgn_of(can_id) == TP_CM_PGN]
    payload = bench.take_long(rts)
    assert payload[0] == 0xFF and payload[1:] == START_IMAGE.data
    assert dm15s(frames)[-1][0] is Status.PROCEED
    assert dm15s(bench.run(2)) == [(Status.OPERATION_COMPLETED, 0, Error.NONE, 0xFFFF)]


def test_a_write_is_committed_at_operation_completed_and_applied() -> None:
    bench = MemBench()
    keyed(bench, spatial(Command.WRITE, 0, len(PARAMETERS), 4))
    bench.send_long(DM16_PGN, bytes([0xFF]) + PARAMETERS)
    assert bench.memory.cvn == START_IMAGE.cvn and bench.truck.applied == 0
    bench.ask(spatial(Command.OPERATION_COMPLETED, 0, 1, 0xFFFF))
    assert bench.memory.cvn == NEW_IMAGE.cvn and bench.truck.applied == 1


def test_a_dm16_with_the_real_count_over_the_transport_is_taken_too() -> None:
    bench = MemBench()
    keyed(bench, spatial(Command.WRITE, 0, len(PARAMETERS), 4))
    bench.send_long(DM16_PGN, bytes([len(PARAMETERS)]) + PARAMETERS)
    bench.ask(spatial(Command.OPERATION_COMPLETED, 0, 1, 0xFFFF))
    assert bench.memory.cvn == NEW_IMAGE.cvn


def test_a_committed_write_is_kept_where_the_memory_keeps_its_image(tmp_path: Path) -> None:
    write_parameters(MemBench(directory=tmp_path))
    assert ProgrammableMemory(START_IMAGE, tmp_path).cvn == NEW_IMAGE.cvn


def test_a_partial_write_stays_staged_until_the_image_passes() -> None:
    bench = MemBench()
    limit, integrity = NEW_IMAGE.data[HEADER_SIZE:HEADER_SIZE + 8], len(PARAMETERS) - 4
    for pointer, data in ((0, limit[:7]), (7, limit[7:]), (integrity, PARAMETERS[integrity:])):
        assert bench.memory.cvn == START_IMAGE.cvn and bench.truck.applied == 0
        keyed(bench, spatial(Command.WRITE, pointer, len(data), 4))
        bench.dm16(bytes([len(data)]) + data)
        bench.ask(spatial(Command.OPERATION_COMPLETED, 0, 1, 0xFFFF))
    assert bench.server.incomplete == 2
    assert bench.memory.cvn == NEW_IMAGE.cvn and bench.truck.applied == 1


def test_operation_failed_from_the_tool_discards_the_staged_write() -> None:
    bench = MemBench()
    keyed(bench, spatial(Command.WRITE, 0, 7, 4))
    bench.dm16(bytes([7]) + PARAMETERS[:7])
    bench.ask(spatial(Command.OPERATION_FAILED, 0, 1, 0xFFFF))
    keyed(bench, spatial(Command.WRITE, len(PARAMETERS) - 4, 4, 4))
    bench.dm16(bytes([4]) + PARAMETERS[-4:])
    bench.ask(spatial(Command.OPERATION_COMPLETED, 0, 1, 0xFFFF))
    assert bench.memory.cvn == START_IMAGE.cvn and bench.truck.applied == 0


def test_a_write_is_refused_with_0x1007_while_the_truck_moves() -> None:
    bench = MemBench()
    bench.truck.speed = 12.0
    assert refusal(bench.ask(spatial(Command.WRITE, 0, 4, 4))) == Error.VEHICLE_MOVING


def test_a_write_is_refused_while_the_speed_is_not_known() -> None:
    bench = MemBench()
    bench.truck.speed = math.nan
    assert refusal(bench.ask(spatial(Command.WRITE, 0, 4, 4))) == Error.VEHICLE_MOVING


def test_a_write_is_refused_with_0x1006_while_the_engine_runs() -> None:
    bench = MemBench()
    bench.truck.rpm = 650.0
    assert refusal(bench.ask(spatial(Command.WRITE, 0, 4, 4))) == Error.ENGINE_RUNNING


def test_a_read_is_allowed_while_the_truck_moves() -> None:
    bench = MemBench()
    bench.truck.speed = 80.0
    assert dm15s(bench.ask(spatial(Command.READ, 0, 4, 1)))[0][0] is Status.PROCEED


def test_a_read_level_may_not_write() -> None:
    assert refusal(MemBench().ask(spatial(Command.WRITE, 0, 4, 1))) == Error.INVALID_LEVEL


def test_a_calibration_level_may_not_write_the_header() -> None:
    assert refusal(MemBench().ask(direct(Command.WRITE, AREA_START, 4, 4))) == Error.INVALID_LEVEL


def test_a_calibration_level_may_not_erase() -> None:
    assert refusal(MemBench().ask(direct(Command.ERASE, AREA_START, 256, 4))) == Error.INVALID_LEVEL


def test_a_level_outside_the_table_is_refused() -> None:
    assert refusal(MemBench().ask(spatial(Command.READ, 0, 4, 9))) == Error.INVALID_LEVEL


def test_a_second_tool_is_told_busy_while_a_session_is_open() -> None:
    bench = MemBench()
    bench.ask(spatial(Command.READ, 0, 4, 7))
    (status, _, error, _), = dm15s(bench.ask(spatial(Command.READ, 0, 4, 7), OTHER_TOOL))
    assert (status, error) == (Status.BUSY, Error.BUSY_OTHER_TOOL)
    assert bench.server.refused[Error.BUSY_OTHER_TOOL] == 1


def test_a_silent_tool_loses_its_session_and_another_may_start() -> None:
    bench = MemBench()
    bench.ask(spatial(Command.READ, 0, 4, 7))
    assert refusal(bench.run(500)) == Error.COMPLETION_TIMEOUT
    assert dm15s(bench.ask(spatial(Command.READ, 0, 4, 7), OTHER_TOOL))[0][0] is Status.PROCEED


def test_a_length_no_dm16_can_carry_is_refused_with_0x102() -> None:
    bench = MemBench()
    assert [refusal(bench.ask(spatial(Command.READ, 0, n, 7))) for n in (0, 1785, 2047)] == [
        Error.INVALID_LENGTH] * 3
    assert bench.server.refused[Error.INVALID_LENGTH] == 3


def test_a_pointer_outside_the_map_is_refused_with_0x100() -> None:
    bench = MemBench()
    assert refusal(bench.ask(direct(Command.READ, AREA_START + 256, 1, 7))) == Error.GENERAL_ADDRESSING
    assert refusal(bench.ask(direct(Command.READ, 0x01000000 | AREA_START, 1, 7))) == Error.GENERAL_ADDRESSING


def test_a_span_past_the_end_of_the_area_is_refused_with_0x103() -> None:
    assert refusal(MemBench().ask(direct(Command.READ, AREA_START + 250, 8, 7))) == Error.MEMORY_OVERFLOW


def test_a_dm16_longer_than_announced_is_refused_and_nothing_is_written() -> None:
    bench = MemBench()
    keyed(bench, spatial(Command.WRITE, 0, 3, 4))
    assert refusal(bench.dm16(bytes([4]) + PARAMETERS[:4])) == Error.INVALID_LENGTH
    assert bench.memory.check() is None  # the staged copy of the active image, untouched
    assert bench.server.session is None and bench.server.refused[Error.INVALID_LENGTH] == 1


def test_a_dm16_over_the_transport_longer_than_announced_writes_nothing() -> None:
    bench = MemBench()
    keyed(bench, spatial(Command.WRITE, 0, 100, 4))
    assert refusal(bench.send_long(DM16_PGN, bytes([0xFF]) + PARAMETERS[:101])) == Error.INVALID_LENGTH
    assert bench.memory.check() is None


def test_an_erase_puts_the_node_in_boot_mode_and_a_boot_load_ends_it() -> None:
    bench = MemBench()
    keyed(bench, direct(Command.ERASE, AREA_START, 256, 7))
    bench.ask(direct(Command.OPERATION_COMPLETED, AREA_START, 1, 0xFFFF))
    assert not bench.memory.application_valid and bench.truck.applied == 0
    keyed(bench, direct(Command.BOOT_LOAD, AREA_START, 256, 7))
    bench.send_long(DM16_PGN, bytes([0xFF]) + NEW_IMAGE.data)
    bench.ask(direct(Command.OPERATION_COMPLETED, AREA_START, 1, 0xFFFF))
    assert bench.memory.application_valid and bench.memory.cvn == NEW_IMAGE.cvn


def test_a_boot_load_of_less_than_the_whole_area_is_refused_with_0x107() -> None:
    frames = MemBench().ask(direct(Command.BOOT_LOAD, AREA_START, 128, 7))
    assert refusal(frames) == Error.BOOT_LOAD_OUT_OF_RANGE


def test_a_status_request_tells_the_last_error() -> None:
    bench = MemBench()
    bench.ask(spatial(Command.READ, 0, 0, 7))
    (status, _, error, _), = dm15s(bench.ask(spatial(Command.STATUS_REQUEST, 0, 1, 0xFFFF)))
    assert (status, error) == (Status.OPERATION_COMPLETED, Error.INVALID_LENGTH)


def test_the_same_session_gives_the_same_bytes_twice() -> None:
    first, second = MemBench(), MemBench()
    for bench in (first, second):
        write_parameters(bench)
    assert first.frames == second.frames


def test_stage_active_makes_the_staging_bank_a_copy_of_the_active_image(tmp_path: Path) -> None:
    memory = ProgrammableMemory(START_IMAGE, tmp_path)
    memory.erase()
    memory.stage_active()
    assert memory.check() is None
    assert (tmp_path / "staging.bin").read_bytes() == START_IMAGE.data
