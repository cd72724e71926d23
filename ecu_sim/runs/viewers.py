"""Wiring of what watches a run by its named signals: the live stream and the MCAP recording.

Both see a tick through one :class:`~ecu_sim.io.signals.TickView`, built here once per run: one
:class:`~ecu_sim.io.signals.NodeView` per node listens on that node's port, and the view decodes
each tick once however many consumers ask for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from ecu_sim.codec.profile import Profile
from ecu_sim.io.mcap_format import McapRecorder
from ecu_sim.io.signals import FrameDecoder, NodeView, TickView, node_counters, node_state
from ecu_sim.io.stream import UdpStream
from ecu_sim.nodes.input import InputNode
from ecu_sim.runtime.loop import LoopStats, TickObserver


def tick_view(nodes: Sequence[tuple[str, InputNode]], profile: Profile, stats: LoopStats,
              period_s: float, timestamp: Callable[[float], float], sampled: bool = False) -> TickView:
    """A view of ``nodes`` (name, node), each listened to on its own port; ``sampled``: read only
    now and then, by a reader that says when (the page)."""
    decoder = FrameDecoder(profile.database)
    views = []
    for name, node in nodes:
        view = NodeView(name, decoder, _bound(node_state, node), _bound(node_counters, node))
        node.port.add_listener(view)
        views.append(view)
    return TickView(views, stats, period_s, timestamp, sampled)


def _bound(function: Callable[[InputNode], Any], node: InputNode) -> Callable[[], Any]:
    return lambda: function(node)


def wall_time(now: float) -> float:
    """A real run's axis: the wall clock, so the ECU's and the CCM's streams line up in a viewer."""
    return time.time()


def stream(stack: ExitStack, target: str | None, view: Callable[[], TickView]) -> list[TickObserver]:
    """``--stream``: the observer that sends each tick, or none."""
    if target is None:
        return []
    return [stack.enter_context(UdpStream(target, view()))]


def mcap_recorder(stack: ExitStack, path: str, head: dict[str, Any], profile: Profile,
                  view: TickView) -> McapRecorder:
    """``--record FILE.mcap``, a listener of the node's port the caller adds."""
    return stack.enter_context(McapRecorder(path, head, profile.database, view))
