"""J1939-73 memory access (DM14, DM15, DM16) to a node's calibration memory, on ticks."""
