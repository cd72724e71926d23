"""What a built node lends a person's controls: its kind and the kinds that take a control, what it
takes between ticks, its J1939 part, its fault injector and transmitter, and (the ECU of
``--network powertrain``) the messages the process sends.

Written here as protocols so that the controls, their grammar included, sit before the settings
and the nodes in the stage table: the settings read a control's text when they load, and the
node factory's ``Built`` is one of these without naming them (ecu_sim.nodes.factory).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from cantools.database.can import Message

from ecu_sim.faults.injector import FaultInjector
from ecu_sim.j1939.dm import Dtc


class OwnerKind(Protocol):
    """A kind of node: its name as a person reads it (``CCM``) and its command (``ccm``)."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...


class RaisesDtcs(Protocol):
    """A J1939 network part, whose DM1 a ``dtc`` control switches."""

    def switch_dtc(self, dtc: Dtc, on: bool, tick: int) -> bool: ...


class BuiltNode(Protocol):
    """The node itself: the controls it takes (by name) and its J1939 part."""

    @property
    def CONTROLS(self) -> frozenset[str]: ...

    @property
    def network(self) -> RaisesDtcs | None: ...

    def take_control(self, name: str, value: Any) -> None: ...


class SentMessage(Protocol):
    """One message the process sends, by its DBC definition."""

    @property
    def message(self) -> Message: ...


class Messages(Protocol):
    """The messages the process sends, by name, and a person's hand on them."""

    def find(self, name: str) -> SentMessage | None: ...

    def names(self) -> list[str]: ...

    def send(self, name: str, on: bool) -> bool: ...

    def cycle(self, name: str, cycle_ms: float, tick: int) -> None: ...

    def fix(self, name: str, signal: str, value: float | None) -> None: ...


class Network(Protocol):
    """``--network powertrain``: the hosted nodes other than the ECU's own, and every message."""

    @property
    def live(self) -> Messages: ...

    @property
    def others(self) -> Mapping[str, RaisesDtcs]: ...


class Controlled(Protocol):
    """A built node, as its controls see it."""

    @property
    def kind(self) -> OwnerKind: ...

    @property
    def node(self) -> BuiltNode: ...

    @property
    def faults(self) -> FaultInjector | None: ...

    @property
    def transmitter(self) -> object: ...

    def owners(self, control: str) -> Sequence[OwnerKind]:
        """The kinds of node that take ``control``, in the factory's order."""
        ...


def network_of(built: Controlled) -> Network | None:
    """The ECU's ``--network powertrain`` (else None), by name: only the factory knows node classes."""
    found: Network | None = getattr(built.node, "powertrain", None)
    return found
