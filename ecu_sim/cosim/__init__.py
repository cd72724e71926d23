"""Co-simulation: ecu-sim stepped by a peer over UDP, and ecu-sim stepping an external plant."""
