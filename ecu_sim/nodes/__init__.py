"""The nodes on the bus (ECU, cruise control module, constant pedal) and the one factory that builds them."""
