"""The class6 truck as a J1939 network (``--network powertrain``): its four nodes and their messages
from the DBC, the TSC1 and XBR frames they obey, and the control functions as J1939-71 describes
them, on ticks."""
