"""The truck's physical parameters: the INI section ``[truck]``, checked before a run starts."""

from __future__ import annotations

from dataclasses import dataclass

from ecu_sim.checks import non_finite_fields

KPH_PER_MPS = 3.6


@dataclass(frozen=True, slots=True)
class TruckParams:
    """Physical parameters; the field names double as the INI keys of section ``[truck]``.

    The defaults are the testbed's Class 6 truck, so a run with no configuration reproduces its published
    coastdown. Units are in the names because the road-load coefficients are conventionally quoted per km/h
    while the integration runs in SI.
    """

    mass_kg: float = 11793.0
    inertia_factor: float = 1.03
    road_load_a_n: float = 579.0
    road_load_b_n_per_kph: float = 0.0
    road_load_c_n_per_kph2: float = 0.241512
    rated_power_kw: float = 179.0
    gravity_mps2: float = 9.81
    traction_limit_mu: float = 0.3

    def problems(self) -> list[str]:
        """Say what is physically meaningless, so configuration can reject it before a run starts.

        Returns one human-readable sentence per problem (empty when the parameters are usable). A negative
        B is allowed, since coastdown fits often produce one, as long as the road load stays non-negative at
        every speed; otherwise the truck would be pushed along by its own drag.
        """
        found = non_finite_fields(self)
        if found:
            return found
        positive = ("mass_kg", "rated_power_kw", "gravity_mps2", "traction_limit_mu")
        for name in positive:
            value = getattr(self, name)
            if value <= 0.0:
                found.append(f"{name} must be > 0 (got {value:g})")
        if self.inertia_factor < 1.0:
            found.append(
                f"inertia_factor must be >= 1, since rotating parts only add to the effective mass "
                f"(got {self.inertia_factor:g})"
            )
        for name in ("road_load_a_n", "road_load_c_n_per_kph2"):
            value = getattr(self, name)
            if value < 0.0:
                found.append(f"{name} must be >= 0 (got {value:g})")
        a, b, c = self.road_load_a_n, self.road_load_b_n_per_kph, self.road_load_c_n_per_kph2
        if b < 0.0 and a >= 0.0 and c >= 0.0:
            if c == 0.0:
                found.append(
                    f"road_load_b_n_per_kph may only be negative when road_load_c_n_per_kph2 > 0 "
                    f"(got B={b:g}, C=0): the road load would turn negative at high speed"
                )
            elif b * b > 4.0 * a * c:
                v_min = -b / (2.0 * c)
                found.append(
                    f"road load A + B*v + C*v^2 turns negative around {v_min:.1f} km/h "
                    f"(A={a:g}, B={b:g}, C={c:g}); make B^2 <= 4*A*C"
                )
        return found
