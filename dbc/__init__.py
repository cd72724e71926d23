"""The built-in message profiles, one DBC file each: ``--profile NAME`` is ``dbc/NAME.dbc``.

The folder sits at the top of the repository, where a reader looks for the message set; the
wheel carries it as the package ``ecu_sim.dbc`` (setup.py maps it), so ``importlib.resources``
finds the same files in a checkout and in an installed ecu-sim.
"""
