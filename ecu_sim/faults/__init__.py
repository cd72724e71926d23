"""Faults injected on purpose into what a node sends, to see how the controller under test copes."""
