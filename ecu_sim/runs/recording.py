"""``--record`` of a run's node: the journal's line 1 every kind of run writes alike, and the
recording of a simulation's ECU, in virtual time and, under attack, labelled.

A real-time run (ecu_sim.runs.realtime) and ``simulate`` record a node the same way: the same
recorders (ecu_sim.io), the same header, so ``ecu-sim replay`` takes either. A simulation's
recorder stamps sent frames and ticks with the virtual clock, so the recording holds simulated
time, as its received frames already do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from ecu_sim.codec.profile import Profile
from ecu_sim.faults.spec import FaultSchedule
from ecu_sim.io.journal import Labeller
from ecu_sim.io.journal_head import header
from ecu_sim.io.mcap_format import McapRecorder
from ecu_sim.io.recorder import Recorder
from ecu_sim.nodes.input import InputNode
from ecu_sim.runs import routes, viewers
from ecu_sim.runtime.loop import LoopStats
from ecu_sim.settings.model import MCAP_FORMAT, Settings
from ecu_sim.vehicle.road import Road
from ecu_sim.vehicle.route import GradeSchedule


def head(kind: str, settings: Settings, profile: Profile, route: GradeSchedule | Road | None,
         schedule: FaultSchedule) -> dict[str, Any]:
    """Line 1 of the node's journal (ecu_sim.io.journal_head.header) with the route as recorded."""
    points = route.points if isinstance(route, GradeSchedule) else None
    road = routes.road_file(settings) if isinstance(route, Road) else None
    return header(kind, settings, profile, points, schedule, settings.record.file or "", road)


def simulated_recorder(stack: ExitStack, settings: Settings, profile: Profile, ecu: InputNode,
                       route: GradeSchedule | Road, schedule: FaultSchedule | None, stats: LoopStats,
                       now: Callable[[], float], labels: Labeller | None = None,
                       attacks: Sequence[dict[str, Any]] = ()) -> Recorder | McapRecorder:
    """``simulate --record``: the ECU's port recorded (closed with ``stack``), a listener the
    caller's loop also observes. ``attacks``: the plan's manifest, which the header carries so a
    reader knows each label's attack."""
    path = settings.record.file
    assert path is not None
    faults = schedule if schedule is not None else FaultSchedule.load((), None, settings.faults.seed)
    first = head("ecu", settings, profile, route, faults)
    if attacks:
        first["attacks"] = list(attacks)
    period = settings.run.resolved_period_s
    if path.lower().endswith(MCAP_FORMAT):
        view = viewers.tick_view([("ecu", ecu)], profile, stats, period, lambda t: t)
        recorder: Recorder | McapRecorder = stack.enter_context(McapRecorder(
            path, first, profile.database, view, now=now, labels=labels))
    else:
        recorder = stack.enter_context(Recorder(path, settings.record.max_bytes, first, period_s=period,
                                                now=now, labels=labels))
    ecu.port.add_listener(recorder)
    return recorder
