"""The picture of a run: speed, pedal, road, drivetrain over time or distance; faults, late ticks marked.

Built on a bare ``matplotlib.figure.Figure`` with the Agg canvas, never through pyplot's global
state, so a PNG is drawn without a display and the figure can be inspected before it is saved;
only ``--show`` hands it to pyplot's window.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ecu_sim.errors import ConfigError, needs_extra
from ecu_sim.plot.series import Series

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

X_AXES = ("time", "distance")
#: panel -> the series drawn in it, with their labels
PANELS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("speed [km/h]", (("speed_kph", "speed"), ("set_speed_kph", "set speed"))),
    ("pedal [%]", (("app_pct", "APP"), ("brake_pct", "brake"))),
    ("grade [%]", (("grade_pct", "grade"),)),
    ("gear", (("gear", "gear"),)),
    ("engine speed [rpm]", (("engine_speed_rpm", "engine speed"),)),
    ("acceleration [m/s²]", (("accel_mps2", "acceleration"),)),
    ("torque mode (SPN 899)", (("torque_mode", "torque mode"),)),
    ("controlling address (SPN 1483)", (("controlling_address", "controlling address"),)),
)


def _figure_class() -> type[Figure]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ConfigError(needs_extra("ecu-sim plot", "matplotlib", "plot")) from None
    return Figure


def draw(series: Series, x: str = "time", make: Callable[..., Figure] | None = None) -> Figure:
    """The figure of ``series``; ``x`` is ``time`` or ``distance`` (an ECU's series only).

    ``make`` builds the empty figure: a bare Agg figure by default, pyplot's for a window.
    """
    if x not in X_AXES:
        raise ConfigError(f"--x must be time or distance (got {x!r})")
    distance = series.values.get("distance_m")
    if x == "distance" and distance is None:
        raise ConfigError(f"{series.source}: --x distance needs the truck's distance, which only the "
                          "ECU has; plot over time, or plot the ECU's output")

    def at(t_s: float) -> float:
        """Where a moment lies on the x axis: a time, or the distance driven by then."""
        if distance is None or x == "time":
            return t_s
        index = min(max(bisect.bisect_left(series.t_s, t_s), 0), len(distance) - 1)
        return distance[index]

    xs = series.t_s if x == "time" or distance is None else distance
    panels = [(label, [(name, text) for name, text in lines if name in series.values])
              for label, lines in PANELS]
    panels = [(label, lines) for label, lines in panels if lines]
    figure = (make or _figure_class())(figsize=(10, 2.2 * len(panels) + 0.8), layout="constrained")
    axes: list[Axes] = list(figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0])
    for ax, (label, lines) in zip(axes, panels, strict=True):
        for name, text in lines:
            ax.plot(xs, series.values[name], label=text, linewidth=1.2,
                    linestyle="--" if name == "set_speed_kph" else "-")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        if len(lines) > 1:
            ax.legend(loc="upper right", fontsize="small")
        for start, end, text in series.faults:
            ax.axvspan(at(start), at(series.t_s[-1] if end is None else end), color="tab:red", alpha=0.12,
                       label=f"fault {text}")
    top = axes[0]
    for start, _, text in series.faults:
        top.annotate(f"fault {text}", (at(start), 1.0), xycoords=("data", "axes fraction"),
                     fontsize="x-small", color="tab:red", va="bottom")
    if series.late_t_s:
        top.plot([at(t) for t in series.late_t_s], [0.0] * len(series.late_t_s), "|", color="tab:orange",
                 markersize=12, transform=top.get_xaxis_transform(), label="late tick")
        top.legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel("time [s]" if x == "time" else "distance [m]")
    figure.suptitle(series.source, fontsize="medium")
    return figure


def save(figure: Figure, path: str) -> None:
    """Write the PNG; a ConfigError when it cannot be written."""
    try:
        figure.savefig(path, dpi=110)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None


def window_figure() -> Callable[..., Figure] | None:
    """pyplot's figure factory, whose figures open in a window, where a display exists; else None."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return None
    import matplotlib.pyplot as plt

    return plt.figure


def show() -> None:
    """Open the windows of the figures made by :func:`window_figure`'s factory, until closed."""
    import matplotlib.pyplot as plt

    plt.show()
