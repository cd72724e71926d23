"""``--web HOST:PORT``: the node's page and its HTTP API, served beside the loop, never in it.

The loop publishes one snapshot a tick (:mod:`ecu_sim.web.state`, a tick observer); a server of
its own thread and event loop (:mod:`ecu_sim.web.server`, aiohttp, the ``web`` extra) answers
requests and pushes snapshots to WebSockets. Controls go the other way through a queue the loop
empties at a tick boundary (:mod:`ecu_sim.controls`), and every one goes into the
recording's tick journal. Nothing here is imported unless ``--web`` is given.
"""
