"""The vehicle nodes' calibrations: the built-in image of each from today's parameters, and the
parameters each model and controller is built from, read back from whichever image it runs.

One path: a truck is never built from its parameters directly, always from the values of its
images (the built-in ones give the same floats, so the same bytes on the wire); an image from a
file or a download takes the same path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import Number, layout_of
from ecu_sim.errors import ConfigError
from ecu_sim.member.application import Application, Calibrated, Restart
from ecu_sim.powertrain.retarder import RETARDER_MAP
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.class6 import Class6Params

#: the calibration ID of each built-in image (our choice)
BUILTIN_IDS: Final = {"ecu": "ECUSIM1-ECU", "engine": "ECUSIM1-ENG", "transmission": "ECUSIM1-TRN",
                      "brakes": "ECUSIM1-BRK", "retarder": "ECUSIM1-RET", "ccm": "ECUSIM1-CCM"}
_SHIFT_FIELDS: Final = ("up_rpm_at_0", "up_rpm_at_100", "down_rpm_at_0", "down_rpm_at_100")
_RETARDER_PEAK: Final = max(t for _, t in RETARDER_MAP)


def vehicle_values(kind: str, params: Class6Params) -> dict[str, Number]:
    """The values of ``kind``'s parameters in the truck ``params`` (and the retarder's map)."""
    known: dict[str, Number] = {"retarder_max_nm": _RETARDER_PEAK,
                                **{f: getattr(params.schedule, f) for f in _SHIFT_FIELDS}}
    return {p.name: known[p.name] if p.name in known else getattr(params, p.name)
            for p in layout_of(kind).parameters}


def builtin_vehicle_image(kind: str, params: Class6Params) -> Image:
    return Image.build(kind, vehicle_values(kind, params), BUILTIN_IDS[kind])


def calibrated_class6(base: Class6Params, images: Mapping[str, Image]) -> Class6Params:
    """``base`` with the values of the images that calibrate the truck (the single-node ECU's, or
    the engine's, the transmission's and the brakes'); checked as the model checks them."""
    values: dict[str, Number] = {}
    for kind in ("ecu", "engine", "transmission", "brakes"):
        if kind in images:
            values.update(images[kind].values)
    shifts = {name: float(values.pop(name)) for name in _SHIFT_FIELDS if name in values}
    numbers: dict[str, Any] = {name: float(value) for name, value in values.items()}
    params = dataclasses.replace(base, schedule=dataclasses.replace(base.schedule, **shifts), **numbers)
    problems = params.problems()
    if problems:
        ids = ", ".join(f"{image.kind} {image.calibration_id!r}" for image in images.values())
        raise ConfigError(f"the calibration ({ids}) cannot drive the truck: {problems[0]}")
    return params


def retarder_points(image: Image | None) -> tuple[tuple[float, float], ...]:
    """The retarder's map scaled to the image's peak torque (the built-in map when it is the peak)."""
    if image is None:
        return RETARDER_MAP
    peak = float(image.value("retarder_max_nm"))
    if peak == _RETARDER_PEAK:
        return RETARDER_MAP
    return tuple((rpm, torque * peak / _RETARDER_PEAK) for rpm, torque in RETARDER_MAP)


def given_file(kind: str, settings: Settings) -> str | None:
    """The image file ``[calibration]`` names for ``kind``; None: the built-in image."""
    value: str | None = getattr(settings.calibration, kind)
    return value


def start_calibration(image: Image, settings: Settings, restart: Restart | None = None) -> Calibrated:
    """What a node starting from ``image`` gives its part: the image, whether ``[calibration]``
    gave it, and the node's restart."""
    return Calibrated(image, given_file(image.kind, settings) is not None, restart)


def running_images(applications: Mapping[str, Application | None],
                   images: Mapping[str, Image]) -> dict[str, Image]:
    """The images the nodes' applications run (``images`` for a node without an application);
    in boot mode the last valid one, which the node's mechanics keep while no application runs."""
    running = dict(images)
    for kind, application in applications.items():
        if application is not None:
            running[kind] = application.image
    return running
