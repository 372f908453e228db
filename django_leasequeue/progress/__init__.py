"""Live job progress for browsers: events, what a viewer is told, who may watch, and the views.

- ``events``: what workers and operators publish to the Channels layer (a no-op without it).
- ``state``: the job's status and progress as one JSON-ready dict, for every kind of viewer.
- ``access``: signed per-job tokens and the permission rule, shared by every view.
- ``viewers``: counting open pages, so that workers publish only for watched jobs.
- ``widget``: the progress bar's template context (``{% leasequeue_progress %}``).
- ``views``: the JSON status view the bar polls without websockets.
- ``consumers``: the websocket consumer (the only module that needs Channels).

Importing this package imports nothing from Channels.
"""
