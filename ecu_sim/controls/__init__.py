"""A person's controls while a node runs: from the node's page, written ahead with a time
(``--control``, ``[controls] apply``, a campaign case) or sent by name by a co-simulation peer.
Each is checked against the built node where it arrives (the refusals say why not), queued, and
applied between two ticks by one desk, which journals it so a replay applies it before the same
tick. The text of a control written ahead (its grammar, ecu_sim.controls.grammar) is read when the
settings load, so a run's settings are checked before any node is built; what the controls need
of a built node is written as protocols (ecu_sim.controls.node), so the package comes before the
settings and the nodes."""
