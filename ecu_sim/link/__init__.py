"""Setting up SocketCAN interfaces for ``ecu-sim link``: create a vcan, configure and restart a controller.

The work is split so that what can be decided without a kernel is: :mod:`.state` reads a netlink
message, :mod:`.plan` decides what must change and refuses what cannot be done, :mod:`.apply` is
the only part that talks netlink, :mod:`.errors` turns the kernel's refusals into advice and
:mod:`.show` prints a state. Nothing here imports python-can or cantools, so the command starts fast.
"""
