"""Files: recordings (python-can logs with their tick journal), replay, and simulation traces."""
