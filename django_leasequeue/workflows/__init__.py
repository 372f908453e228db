"""Workflows: steps that run after other steps (chains, groups, chords, any dependency graph),
each step a job, released in the transaction that records its last upstream step's outcome.
The module map is in docs/architecture.md; the guide in docs/workflows.md."""
