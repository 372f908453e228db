"""The tasks the tests enqueue: ``basic`` (the general ones), and one module per subject."""
