"""``python -m bench`` is what ``scripts/bench`` runs once the environment is set up;
``scripts/bench campaign ...`` runs the campaign benchmark (bench/campaign.py) instead."""

import sys

if sys.argv[1:2] == ["campaign"]:
    from bench.campaign import main as campaign_main

    sys.exit(campaign_main(sys.argv[2:]))

from bench.run import main

sys.exit(main())
