"""Time and schedule: the clocks (real and virtual), the one tick loop, held inputs, seconds to ticks."""
