"""Live job progress for browsers: events, what a viewer is told, who may watch, and the views.

Importing this package imports nothing from Channels; only ``consumers`` (the websocket) needs it.
Its modules, one line each: docs/architecture.md, *Packages and modules*.
"""
