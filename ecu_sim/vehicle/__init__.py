"""The truck: its parameters, the longitudinal model (pure, no I/O, no clock) and the road it drives."""
