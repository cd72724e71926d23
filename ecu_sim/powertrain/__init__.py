"""The powertrain ECUs' control functions as J1939-71 describes them: tick-based, pure, no I/O."""
