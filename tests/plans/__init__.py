"""The plans PostgreSQL makes for the worker's statements and the functions' statements, read on
a job table with realistic statistics: each statement must read the table through the index
it was written for (docs/architecture.md, "The indexes of the hot statements")."""
