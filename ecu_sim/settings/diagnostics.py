"""``[diagnostics]``: every node's UDS server over ISO-TP, its security access and where it is kept."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from ecu_sim.uds.security import FLAWS

#: a Python module path, a colon and a function name
_ALGORITHM: Final = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


@dataclass(frozen=True)
class DiagnosticsSettings:
    """On by default: a server is silent until a tester asks, so a bus without one is unchanged."""

    enabled: bool = True
    #: MODULE:FUNCTION of the key algorithm, called with the seed and the level; None: the
    #: documented default (docs/diagnostics.md)
    key_algorithm: str | None = None
    #: invalid keys answered 0x35 before the next one is refused with 0x36 and the delay starts
    attempts: int = 3
    delay_s: float = 10.0
    #: where each node's security state (seed counter, attempts, delay) is kept; None: in memory
    #: for the run. Under a systemd unit, its state directory
    state_dir: str | None = None
    #: a diagnostic script a tester on the bus holds in ``simulate`` and ``cosim`` (docs/diagnostics.md);
    #: None: no tester
    script: str | None = None
    #: where that tester writes what each request was answered (CSV); None: the log only
    answers: str | None = None
    #: the flaws researchers report, given to every node's security access for a flawed node
    #: beside its patched twin: ``none``, or names of ``ecu_sim.uds.security.FLAWS`` joined by ``+``
    #: (e.g. ``weak-key+no-attempt-limit``); docs/security.md
    flaw: str = "none"

    @property
    def flaws(self) -> frozenset[str]:
        """The flaws :attr:`flaw` names (empty for ``none``)."""
        return frozenset() if self.flaw == "none" else frozenset(self.flaw.split("+"))

    def problems(self) -> list[str]:
        found = []
        if self.key_algorithm is not None and not _ALGORITHM.fullmatch(self.key_algorithm):
            found.append(f"key_algorithm must be MODULE:FUNCTION, e.g. mykeys:key "
                         f"(got {self.key_algorithm!r})")
        if not 0 <= self.attempts <= 255:
            found.append(f"attempts must be 0..255 (got {self.attempts})")
        if not (math.isfinite(self.delay_s) and 0.0 <= self.delay_s <= 86400.0):
            found.append(f"delay_s must be within 0..86400 s (got {self.delay_s})")
        if self.answers is not None and self.script is None:
            found.append("answers is where a diagnostic script's answers go: give script too")
        unknown = sorted(self.flaws - FLAWS.keys())
        if unknown:
            found.append(f"flaw {unknown[0]!r} is not one; give none or of {', '.join(FLAWS)} joined "
                         f"by '+' (got {self.flaw!r})")
        return found
