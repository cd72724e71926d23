"""The driver's controls read from the outside world: a Linux input device, or the terminal's keys."""
