"""``--control`` and ``[controls] apply``: each text is the page's control (the body of
``POST /api/control``) with a time, and a window is the control and its undoing."""

from __future__ import annotations

import pytest

from ecu_sim.controls.grammar import ControlSpecError, Timed, parse_control


def test_a_control_without_a_time_acts_from_tick_0() -> None:
    assert parse_control("cycle:TCO1=200") == [Timed(0.0, {"message": "TCO1", "cycle_ms": 200.0},
                                                     "cycle:TCO1=200")]


def test_a_stopped_message_with_a_window_is_sent_again_at_its_end() -> None:
    start, end = parse_control("stop:TCO1@30+10")
    assert (start.at_s, start.body, end.at_s, end.body) == (
        30.0, {"message": "TCO1", "send": False}, 40.0, {"message": "TCO1", "send": True})


def test_a_fixed_signal_with_a_window_is_freed_at_its_end() -> None:
    assert [(t.at_s, t.body["value"]) for t in parse_control("signal:TCO1.Driver1WorkingState=2@10-20")] == [
        (10.0, 2.0), (20.0, None)]


def test_a_dtc_names_its_node_or_is_the_ecus_own_and_is_cleared_at_the_windows_end() -> None:
    on, off = parse_control("dtc:TACHOGRAPH=1624:2@5-6")
    assert (on.body, off.body["on"]) == ({"fault": "dtc=1624:2", "on": True, "node": "TACHOGRAPH"}, False)
    assert parse_control("dtc=524:2")[0].body == {"fault": "dtc=524:2", "on": True}


@pytest.mark.parametrize(("text", "says"), [
    ("stop:TCO1@-1", "the time must be"),
    ("stop:TCO1@30-20", "ends before it starts"),
    ("cycle:TCO1=200@1-2", "not a window"),
    ("cycle:TCO1", "needs a value"),
    ("stop:TCO1=1", "takes no value"),
    ("signal:TCO1=2", "MESSAGE.SIGNAL"),
    ("signal:TCO1.Driver1WorkingState=fast", "must be a number"),
    ("dtc:TACHOGRAPH=1624", "SPN:FMI"),
    ("stop", "names a message"),
])
def test_a_text_that_is_no_control_says_what_is_expected(text: str, says: str) -> None:
    with pytest.raises(ControlSpecError, match=says):
        parse_control(text)
