"""The test settings for clients that reach PostgreSQL through PgBouncer in transaction
pooling mode (docs/pgbouncer.md says why each line is needed)."""

from tests.support.settings import *  # noqa: F403

for _database in DATABASES.values():  # noqa: F405
    # A server-side cursor (QuerySet.iterator()) lives across transactions: PgBouncer may hand
    # its next FETCH to another server connection, where the cursor does not exist.
    _database["DISABLE_SERVER_SIDE_CURSORS"] = True
    # Prepared statements belong to one server connection, too (PgBouncer < 1.21).
    _database["OPTIONS"] = {**_database.get("OPTIONS", {}), "prepare_threshold": None}
