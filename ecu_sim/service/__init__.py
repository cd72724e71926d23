"""Running under systemd: sd_notify (ready, status, watchdog) and logging for the journal."""
