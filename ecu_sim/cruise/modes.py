"""The INI section ``[controller]``: which cruise controller the CCM runs, and its parameters.

One section for both controllers, because the predictive one is the PI controller's hold with a
rule on top (ecu_sim.cruise.predictive): its gains are the PI controller's, and a campaign varies
``controller.mode`` like any other key.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecu_sim.cruise.pi import PiParams
from ecu_sim.cruise.predictive import PredictiveParams

#: the words ``[controller] mode`` and ``--controller`` accept
CONTROLLER_MODES = ("pi", "predictive")
_PI = PiParams()
_PREDICTIVE = PredictiveParams()


@dataclass(frozen=True)
class ControllerSettings:
    """The field names are the INI keys; the band keys only matter with ``mode = predictive``."""

    mode: str = "pi"
    kp: float = _PI.kp
    ki: float = _PI.ki
    app_min_pct: float = _PI.app_min_pct
    app_max_pct: float = _PI.app_max_pct
    under_kph: float = _PREDICTIVE.under_kph
    over_kph: float = _PREDICTIVE.over_kph
    preview_m: float = _PREDICTIVE.preview_m
    eco_roll: bool = _PREDICTIVE.eco_roll
    eco_roll_min_kph: float = _PREDICTIVE.eco_roll_min_kph
    eco_roll_min_s: float = _PREDICTIVE.eco_roll_min_s
    #: None: the truck's default (:meth:`predictive_for`)
    anticipate_kph: float | None = None
    anticipate_m: float = _PREDICTIVE.anticipate_m
    climb_pct: float = _PREDICTIVE.climb_pct

    @property
    def pi(self) -> PiParams:
        return PiParams(self.kp, self.ki, self.app_min_pct, self.app_max_pct)

    @property
    def predictive(self) -> PredictiveParams | None:
        """The band and preview with ``mode = predictive``; None for the PI controller alone. An
        unset lift is the default of a CCM that may eco-roll (:meth:`predictive_for`)."""
        return self.predictive_for(neutral=True)

    def predictive_for(self, neutral: bool) -> PredictiveParams | None:
        """:attr:`predictive` for a CCM that can ask the transmission for neutral (``neutral``) or
        cannot. The lift ahead of a climb, unless set, is the default only where the CCM may
        eco-roll: with the coast in gear alone the speed it buys costs more air drag than the
        climb gives back, so it would cost fuel against the PI controller (docs/eco-cruise.md)."""
        if self.mode != "predictive":
            return None
        return self._predictive(rolls=neutral and self.eco_roll)

    def _predictive(self, rolls: bool = True) -> PredictiveParams:
        lift = self.anticipate_kph
        if lift is None:
            lift = _PREDICTIVE.anticipate_kph if rolls else 0.0
        return PredictiveParams(self.under_kph, self.over_kph, self.preview_m, self.eco_roll,
                                self.eco_roll_min_kph, self.eco_roll_min_s, lift,
                                self.anticipate_m, self.climb_pct)

    def problems(self) -> list[str]:
        """The PI controller's problems, then the band's (checked whatever the mode, so a file that
        switches the mode later is not found wrong only then)."""
        found = []
        if self.mode not in CONTROLLER_MODES:
            found.append(f"mode must be pi or predictive (got {self.mode!r}): pi holds the set speed, "
                         "predictive also previews the route (--route) and coasts before crests and dips")
        found += self.pi.problems()
        found += self._predictive().problems()
        return found
