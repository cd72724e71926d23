"""``python -m bench`` is what ``scripts/bench`` runs once the environment is set up;
``scripts/bench campaign ...`` runs the campaign benchmark (bench/campaign.py) instead, and
``scripts/bench controller`` how many real-time cases with a controller under test fit at once
(bench/controller.py), ``scripts/bench versus REV`` this tree's virtual-time rates beside a
commit's (bench/versus.py), ``scripts/bench attacks`` the J1939 floods against this tree and a
commit (bench/attacks.py), ``scripts/bench dataset`` labelled frames a second beside unlabelled
ones (bench/dataset.py), ``scripts/bench attack-effect`` an attack's effect on the real-time ECU
beside ``simulate``'s (bench/attack_effect.py), ``scripts/bench downloads`` the node's late ticks
while twenty downloads of its page's recording are asked for at once (bench/downloads.py),
``scripts/bench uds`` a UDS download to the real-time powertrain beside the same bytes echoed by
python-can, and EEC1's cadence during it (bench/uds_download.py)."""

import sys

if sys.argv[1:2] == ["campaign"]:
    from bench.campaign import main as campaign_main

    sys.exit(campaign_main(sys.argv[2:]))

if sys.argv[1:2] == ["controller"]:
    from bench.controller import main as controller_main

    sys.exit(controller_main(sys.argv[2:]))

if sys.argv[1:2] == ["versus"]:
    from bench.versus import main as versus_main

    sys.exit(versus_main(sys.argv[2:]))

if sys.argv[1:2] == ["attacks"]:
    from bench.attacks import main as attacks_main

    sys.exit(attacks_main(sys.argv[2:]))

if sys.argv[1:2] == ["attack-effect"]:
    from bench.attack_effect import main as attack_effect_main

    sys.exit(attack_effect_main(sys.argv[2:]))

if sys.argv[1:2] == ["downloads"]:
    from bench.downloads import main as downloads_main

    sys.exit(downloads_main(sys.argv[2:]))

if sys.argv[1:2] == ["uds"]:
    from bench.uds_download import main as uds_main

    sys.exit(uds_main(sys.argv[2:]))

if sys.argv[1:2] == ["dataset"]:
    from bench.dataset import main as dataset_main

    sys.exit(dataset_main(sys.argv[2:]))

from bench.run import main

sys.exit(main())
