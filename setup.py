"""The one packaging rule setup.cfg cannot state: the top-level ``dbc/`` folder is ``ecu_sim.dbc``."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["ecu_sim", "ecu_sim.*"]), "ecu_sim.dbc"],
    package_dir={"ecu_sim.dbc": "dbc"},
)
