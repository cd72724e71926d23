"""A node's calibration: the layout of its memory, its image, the files it travels in, and the
programmable memory that keeps the last one a node was given."""
