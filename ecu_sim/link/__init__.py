"""link."""
