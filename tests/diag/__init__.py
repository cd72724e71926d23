"""``ecu-sim diag``, the tester for people, as a process against a node process on the host's bus."""
