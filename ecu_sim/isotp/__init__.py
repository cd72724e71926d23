"""ISO 15765-2 (ISO-TP) on 29-bit normal fixed addressing, server side, advanced by the node's ticks."""
