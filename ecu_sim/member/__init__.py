"""A J1939 network member on a port: its claim, requests, DM1 and transport, built from the DBC."""
