"""A tester on the loop's ticks: UDS requests over ISO-TP, and a script of them at times."""
