"""Which calibration image each node starts from: the file ``[calibration]`` names for its kind,
else the built-in one made from the settings; and the CCM's controller read back from its image.

A node's model or controller is built from its image's values only (ecu_sim.powertrain.calibrated
for the truck's nodes), so a run from a file and a run from the settings take one path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from ecu_sim.calibration.files import read_image
from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import NODE_KINDS, CalibrationError, Number, layout_of
from ecu_sim.cruise.pi import PiParams
from ecu_sim.errors import ConfigError
from ecu_sim.member.application import Calibrated, Restart
from ecu_sim.member.part import NetworkPart
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.driver import Driver
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.powertrain.calibrated import (
    BUILTIN_IDS,
    builtin_vehicle_image,
    calibrated_class6,
    given_file,
    running_images,
    start_calibration,
)
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.class6 import Class6Model, Class6Params


def class6_base(settings: Settings) -> Class6Params:
    """The class6 truck of the settings (its payload) before its calibration is applied."""
    return dataclasses.replace(Class6Params(), mass_kg=Class6Params().mass_kg + settings.vehicle.payload_kg)


def class6_model(settings: Settings, images: Mapping[str, Image]) -> Class6Model:
    """The class6 truck with the settings' payload, calibrated by the images its nodes run."""
    return Class6Model(calibrated_class6(class6_base(settings), images))


def calibrated_kinds(node: str, hosts_powertrain: bool) -> tuple[str, ...]:
    """The calibrations node ``node`` (ECU, CCM, DRIVER) runs: the powertrain's four nodes', the
    single-node ECU's, the CCM's; the driver is a person, not an ECU."""
    if node == "ECU":
        return ("engine", "transmission", "brakes", "retarder") if hosts_powertrain else ("ecu",)
    return ("ccm",) if node == "CCM" else ()


def ccm_values(settings: Settings) -> dict[str, Number]:
    pi = settings.controller.pi
    return {p.name: getattr(pi, p.name) for p in layout_of("ccm").parameters}


def builtin_image(kind: str, settings: Settings) -> Image:
    """The image a node of ``kind`` has when none is given: the settings' values (today's behaviour)."""
    try:
        if kind == "ccm":
            return Image.build(kind, ccm_values(settings), BUILTIN_IDS[kind])
        return builtin_vehicle_image(kind, class6_base(settings))
    except CalibrationError as exc:
        raise ConfigError(f"the settings make no {kind} calibration: {exc}") from None


def node_image(kind: str, settings: Settings) -> Image:
    """The image the node of ``kind`` starts from; a bad file is a ConfigError naming where it was set."""
    path = given_file(kind, settings)
    if path is None:
        return builtin_image(kind, settings)
    try:
        return read_image(Path(path), kind)
    except CalibrationError as exc:
        origin = settings.origins.get(f"calibration.{kind}", f"[calibration] {kind}")
        raise ConfigError(f"{exc} ({origin})") from None


def node_images(kinds: Iterable[str], settings: Settings) -> dict[str, Image]:
    return {kind: node_image(kind, settings) for kind in kinds}


def given_images(settings: Settings) -> dict[str, Image]:
    """The images ``[calibration]`` names, each read and checked (for its node kind)."""
    kinds = [kind for kind in NODE_KINDS if given_file(kind, settings) is not None]
    return node_images(kinds, settings)


def pi_params(image: Image) -> PiParams:
    """The CCM's PI controller from its image; checked as the controller checks its parameters."""
    params = PiParams(**{name: float(value) for name, value in image.values.items()})
    problems = params.problems()
    if problems:
        raise ConfigError(f"the CCM's calibration {image.calibration_id!r} cannot drive: {problems[0]}")
    return params


def own_images(part: NetworkPart | None, images: Mapping[str, Image]) -> dict[str, Image]:
    """``images`` with the one the node's own application runs (its memory's, boot mode) in place."""
    application = None if part is None else part.application
    return running_images({} if application is None else {application.kind: application}, images)


def restart_vehicle(node: Ecu | Ccm | Driver, model: Class6Model, running: bool) -> None:
    """The ECU's engine application restarted (``running`` False: into boot mode), the class6
    truck stepped by ``model`` from now on."""
    if isinstance(node, Ecu):
        node.restart(model, running)


def restart_node(node: Ecu | Ccm | Driver, part: NetworkPart | None, images: Mapping[str, Image],
                 settings: Settings) -> None:
    """A node's application restarted from the image its memory holds (``images``: the start ones):
    the CCM's controller, or the class6 truck's model, built again (a testbed truck reads none)."""
    running = own_images(part, images)
    if isinstance(node, Ccm):
        node.restart(pi_params(running["ccm"]))
    else:
        booting = part is not None and part.application is not None and part.application.boot
        restart_vehicle(node, class6_model(settings, running), not booting)


def start(images: Mapping[str, Image], kind: str, settings: Settings, restart: Restart) -> Calibrated | None:
    """What the node of calibration ``kind`` gives its part (None: it has no calibration)."""
    image = images.get(kind)
    return None if image is None else start_calibration(image, settings, restart)
