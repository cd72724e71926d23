"""A person's controls (ecu_sim.controls) are checked against what the node takes, and refused
with a kind of refusal that knows nothing of HTTP; only the page's server turns it into a status."""

from __future__ import annotations

import pytest

from ecu_sim.controls.check import NAMES, Control, check
from ecu_sim.controls.desk import apply
from ecu_sim.controls.refusals import ControlError, Refusal
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.driver import Driver
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.factory import NodeKind, kinds_taking
from tests.helpers.nodebench import Bench


def refusal_of(body: object, kind: str) -> Refusal | None:
    bench = Bench(kind)
    try:
        check(body, bench.built, bench.profile.speed, 0.1)
    except ControlError as exc:
        return exc.refusal
    return None


def test_every_control_a_node_kind_takes_is_one_the_page_can_send() -> None:
    assert set(NAMES) >= Ecu.CONTROLS | Ccm.CONTROLS | Driver.CONTROLS


def test_the_set_speed_is_the_ccms_alone_and_the_pedal_override_the_ecus_and_the_ccms() -> None:
    assert (kinds_taking("set_speed_kph"), kinds_taking("pedal_override")) == (
        [NodeKind.CCM], [NodeKind.ECU, NodeKind.CCM])


def test_a_refusal_names_the_node_the_control_belongs_to_and_this_one() -> None:
    bench = Bench("ecu")
    with pytest.raises(ControlError, match=r"a control of the CCM \(ecu-sim ccm\); this node is the ECU"):
        check({"cruise": True}, bench.built, bench.profile.speed, 0.1)


def test_the_driver_node_takes_no_control() -> None:
    assert not Driver.CONTROLS


@pytest.mark.parametrize("name", ["set_speed_kph", "cruise"])
def test_a_control_of_the_ccm_sent_to_the_ecu_is_refused_as_not_here(name: str) -> None:
    assert refusal_of({name: 50}, "ecu") is Refusal.NOT_HERE


def test_a_value_outside_the_dbc_range_is_refused_as_out_of_range() -> None:
    assert refusal_of({"set_speed_kph": 1e9}, "ccm") is Refusal.OUT_OF_RANGE


def test_a_body_that_is_no_control_is_refused_as_malformed() -> None:
    assert refusal_of({"warp": 9}, "ccm") is Refusal.MALFORMED


def test_a_control_the_node_takes_is_accepted_and_applied_by_the_node() -> None:
    bench = Bench("ccm")
    control = check({"set_speed_kph": 72}, bench.built, bench.profile.speed, 0.1)
    assert apply(control, bench.built, 0) is None
    assert bench.ccm.set_speed_kph == 72


def test_the_pedal_override_is_the_ecus_pedal_until_released() -> None:
    bench = Bench("ecu")
    apply(Control("pedal_override", 40.0), bench.built, 0)
    assert bench.ecu.pedal_override_pct == 40.0
    apply(Control("pedal_override", None), bench.built, 0)
    assert bench.ecu.pedal_override_pct is None


def test_the_pages_server_has_an_http_status_for_every_refusal() -> None:
    pytest.importorskip("aiohttp")
    from ecu_sim.web.server import REFUSAL_STATUS

    assert set(REFUSAL_STATUS) == set(Refusal)
    assert all(400 <= status < 500 for status in REFUSAL_STATUS.values())
