"""SAE J1939 protocol arithmetic: pure functions on identifiers and raw values, no I/O, no CAN library."""
