"""Settings as plain data, and merging them from defaults, an INI file, the environment and options."""
