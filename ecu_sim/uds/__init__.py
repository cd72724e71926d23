"""The UDS (ISO 14229-1) server of a node: services, sessions, security access, download; pure, on ticks."""
