"""Runs put together: settings checked against the DBC, a real-time node, a simulation in virtual time,
a recording replayed through the node it came from."""
