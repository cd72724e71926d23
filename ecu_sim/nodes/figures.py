"""What a node has to show: its figures, each a name, a unit and a value, said by the node itself.

Every reader (the status line, the trace CSV, the signals file's state and counters groups, and
through it the stream, MCAP and the plot, and the web page's state) picks the figures it shows
by name. So a reader never asks which class a node is, and a new node kind, or a new figure of
one, reaches every reader that knows the name without touching any of them.

A node builds its figures when asked, never on its own tick: a run with no reader attached pays
nothing for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple, Protocol

#: what a figure holds: a number, a word (the page's cruise state), or None where there is none yet
Value = float | int | str | None


class Figure(NamedTuple):
    """One figure of a node: immutable, and a tuple, as cheap to make as a reader that asks at every
    tick needs.

    ``recorded``: part of the signals file's state group (the stream, MCAP and the plot). Figures
    the page and the status line gained later stay out of it, so that recordings keep one shape
    and the tools that read them are not surprised by new keys.

    ``shown``: how the status line shows it, a ``str.format`` template the value goes into (a
    template without a placeholder for a value there is none of); empty: not shown.
    """

    name: str
    unit: str
    value: Value
    recorded: bool = True
    shown: str = ""

    def text(self) -> str:
        """The figure as the status line shows it."""
        return self.shown.format(self.value)


class Figured(Protocol):
    """Anything that says its figures: every node kind."""

    def figures(self) -> tuple[Figure, ...]:
        """The node's figures now, in the order the signals file lists the recorded ones: the same
        names in the same order at every call through a run (a figure with no value now says
        None), so a reader may find its figures by position once."""
        ...


class Counted(Protocol):
    """A node that counts what its port handled: the signals file's counters group."""

    def counter_figures(self) -> tuple[Figure, ...]:
        """The node's counters now, by name."""
        ...


def values(figures: Iterable[Figure]) -> dict[str, Value]:
    """The figures' values by name."""
    return {figure.name: figure.value for figure in figures}


def recorded(figures: Iterable[Figure]) -> dict[str, float]:
    """The numbers the signals file records: recorded figures that have a number now (a speed not
    heard yet is left out, not written as a blank)."""
    return {figure.name: figure.value for figure in figures
            if figure.recorded and isinstance(figure.value, int | float)}


def status_text(figures: Iterable[Figure], order: Iterable[str]) -> str:
    """The status line's figures in the node's ``order``, each as it says it is shown."""
    by_name: Mapping[str, Figure] = {figure.name: figure for figure in figures}
    return " | ".join(figure.text() for name in order
                      if (figure := by_name.get(name)) is not None and figure.shown)
