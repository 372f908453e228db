"""The worker runtime behind ``manage.py runworkers``: a supervisor process starts the worker
processes, each one asyncio loop; only ``supervisor`` and ``process`` handle Unix signals. Its
modules, one line each: docs/architecture.md, *Packages and modules*.
"""
