"""Files: recordings (python-can logs with their tick journal) and simulation traces."""
