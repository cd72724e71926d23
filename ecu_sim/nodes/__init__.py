"""The nodes on the bus (ECU, cruise control module, driver, constant pedal), what every node shares
(the input node, its figures, the identifiers its frames carry) and the one factory that builds them."""
