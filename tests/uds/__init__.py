"""The UDS server (ISO 14229-1) in virtual time, and against udsoncan over can-isotp in a process."""
