"""The edge to CAN: bus options the python-can way, the port, the transmitters (user space, kernel BCM)."""
