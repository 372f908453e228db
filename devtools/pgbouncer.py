"""A PgBouncer binary for the PgBouncer tests, found or installed without asking anyone.

In this order: ``LEASEQUEUE_PGBOUNCER``; a ``pgbouncer`` on PATH or in ``/usr/sbin``; Debian's
``pgbouncer`` package through apt-get when running as root (the package's own service is not
used: the tests start their own PgBouncer on a free port). Otherwise None, with the one command
to run in ``INSTALL_HINT``.
"""

import os
import shutil
from pathlib import Path

from devtools import apt

# The environment variable that tells the tests which pgbouncer binary to run.
ENV_VAR = "LEASEQUEUE_PGBOUNCER"
INSTALL_HINT = f"sudo apt-get install pgbouncer (Debian, Ubuntu), or point {ENV_VAR} at one"


def _installed() -> str | None:
    found = os.environ.get(ENV_VAR) or shutil.which("pgbouncer")
    if found:
        return found
    system = Path("/usr/sbin/pgbouncer")
    return str(system) if system.exists() else None


def ensure_pgbouncer() -> str | None:
    """The path of a pgbouncer binary, installing Debian's package when there is none and we
    may; None when there is no way to get one."""
    found = _installed()
    if found is None and apt.install(
        "pgbouncer", "PgBouncer for the PgBouncer tests", recommends=False
    ):
        found = _installed()
    return found


if __name__ == "__main__":
    path = ensure_pgbouncer()
    raise SystemExit(f"pgbouncer: {path}" if path else f"No pgbouncer; run: {INSTALL_HINT}")
