"""A person's controls while a node runs: from the node's page, written ahead with a time
(``--control``, ``[controls] apply``, a campaign case) or sent by name by a co-simulation peer.
Each is checked against the built node where it arrives (the refusals say why not), queued, and
applied between two ticks by one desk, which journals it so a replay applies it before the same
tick. The text of a control written ahead is read with the settings (ecu_sim.settings.controls),
so a run's settings are checked before any node is built."""
