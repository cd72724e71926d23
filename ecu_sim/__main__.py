"""``python -m ecu_sim`` is the same as the ``ecu-sim`` command."""

import sys

from ecu_sim.cli import main

sys.exit(main())
