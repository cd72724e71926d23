"""vehicle."""
