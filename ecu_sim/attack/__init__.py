"""The attacker: the published J1939 attacks as frames on ticks, labelled, on any bus."""
