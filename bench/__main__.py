"""``python -m bench`` is what ``scripts/bench`` runs once the environment is set up."""

import sys

from bench.run import main

sys.exit(main())
