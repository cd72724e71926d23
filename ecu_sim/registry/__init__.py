"""One table per family of kinds (attacks, faults, controls, diagnostic services): each kind once."""
