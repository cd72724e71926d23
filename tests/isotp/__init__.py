"""ISO-TP (ISO 15765-2) on 29-bit normal fixed addressing, server side, in virtual time."""
