"""The driver's pedals and buttons from the outside world: a Linux input device, the terminal's keys."""
