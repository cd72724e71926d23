"""One case's row of results as a record, from the run that makes it to the table that holds it.

A row is the case's id and status, its own settings as its file gives them, its figures as values
(numbers where they are numbers) and the error of a failed case. It is written as text in one
place only, :meth:`Row.cells`, where the results table (ecu_sim.campaign.results) writes its CSV;
``campaign compare`` reads a table back into rows (:meth:`Row.parse`) and asks them for numbers
(:meth:`Row.number`). So the table's bytes are decided in one place, and the code in between passes
values, not their text.

Which columns there are, in which order and which way is better is said by the tables of the
modules that compute them: ``FIGURES`` (ecu_sim.campaign.figures), ``COLUMNS``
(ecu_sim.campaign.program, a controller under test), ``EFFECT_FIGURES`` (ecu_sim.campaign.effect).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

#: columns every row starts with; the case's settings and the figures follow, the error last
HEAD = ("id", "status")
TAIL = ("error",)
OK = "ok"
FAILED = "failed"



class Fixed(NamedTuple):
    """A number written with a fixed number of decimals, for a column whose precision is its own
    (a lateness in tenths of a millisecond)."""

    value: float
    decimals: int


#: a figure's value: a number, a text (a hash, a list, a word), or None where it does not apply
Figure = Fixed | float | int | str | None


@dataclass(frozen=True)
class Row:
    """One case's results."""

    id: str
    status: str = OK
    #: the case's own settings (``section.key``), as its row shows them
    settings: Mapping[str, str] = field(default_factory=dict)
    #: its figures by column name; one not given is an empty cell
    figures: Mapping[str, Figure] = field(default_factory=dict)
    error: str = ""

    def cells(self) -> dict[str, str]:
        """The row as the table's text, by column: the one place a value becomes text."""
        return {"id": self.id, "status": self.status, **self.settings,
                **{name: text(value) for name, value in self.figures.items()}, "error": self.error}

    def __getitem__(self, name: str) -> str:
        """A cell as the table writes it (KeyError for a column the row has not)."""
        return self.cells()[name]

    def given(self, figures: Mapping[str, Figure]) -> Row:
        """This row with ``figures`` filled in."""
        return Row(self.id, self.status, self.settings, {**self.figures, **figures}, self.error)

    def failed(self, error: str, **figures: Figure) -> Row:
        """This row as a failed case's, with ``error`` and the figures the failure still gives."""
        return Row(self.id, FAILED, self.settings, {**self.figures, **figures}, error.replace("\n", " "))

    def number(self, name: str) -> float:
        """A figure as a number; NaN where it is empty or no number (a failed case)."""
        value = self.figures.get(name)
        if isinstance(value, Fixed):
            return value.value
        if isinstance(value, str):
            try:
                return float(value) if value else math.nan
            except ValueError:
                return math.nan
        return math.nan if value is None else float(value)

    def value(self, name: str) -> str:
        """A setting's or a figure's text, as the table shows it; empty where the row has none."""
        if name in self.settings:
            return self.settings[name]
        return text(self.figures.get(name))

    @classmethod
    def parse(cls, cells: Mapping[str, str]) -> Row:
        """A row read back from a table: the dotted columns are settings, the rest its figures."""
        settings = {name: cell for name, cell in cells.items() if "." in name}
        figures = {name: cell for name, cell in cells.items()
                   if name not in settings and name not in HEAD and name not in TAIL}
        return cls(cells.get("id", ""), cells.get("status", ""), settings, figures, cells.get("error", ""))


def text(value: Figure) -> str:
    """A figure as the table writes it: fixed significant digits for a number that is not whole,
    so identical runs give identical files."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Fixed):
        return f"{value.value:.{value.decimals}f}"
    if isinstance(value, float):
        return f"{value:.9g}"
    return str(value)
