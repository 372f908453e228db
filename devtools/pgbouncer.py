"""A PgBouncer binary for the PgBouncer tests, found or installed without asking anyone.

In this order: ``LEASEQUEUE_PGBOUNCER``; a ``pgbouncer`` on PATH or in ``/usr/sbin``; Debian's
``pgbouncer`` package through apt-get when running as root (the package's own service is not
used: the tests start their own PgBouncer on a free port). Otherwise None, with the one command
to run in ``INSTALL_HINT``.
"""

import os
import shutil
import subprocess
from pathlib import Path

# The environment variable that tells the tests which pgbouncer binary to run.
ENV_VAR = "LEASEQUEUE_PGBOUNCER"
INSTALL_HINT = f"sudo apt-get install pgbouncer (Debian, Ubuntu), or point {ENV_VAR} at one"
_APT_TIMEOUT = 900


def _installed() -> str | None:
    found = os.environ.get(ENV_VAR) or shutil.which("pgbouncer")
    if found:
        return found
    system = Path("/usr/sbin/pgbouncer")
    return str(system) if system.exists() else None


def _run_quietly(command: list[str]) -> bool:
    print(f"Installing PgBouncer for the PgBouncer tests: {' '.join(command)}", flush=True)
    # The package's post-install script would start its own service: not wanted, not needed.
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "RUNLEVEL": "1"}
    try:
        done = subprocess.run(command, capture_output=True, timeout=_APT_TIMEOUT, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _apt_install() -> bool:
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "pgbouncer"]
    return _run_quietly(install) or (
        _run_quietly(["apt-get", "update", "-q"]) and _run_quietly(install)
    )


def ensure_pgbouncer() -> str | None:
    """The path of a pgbouncer binary, installing Debian's package when there is none and we
    may; None when there is no way to get one."""
    found = _installed()
    if found is None and _apt_install():
        found = _installed()
    return found


if __name__ == "__main__":
    path = ensure_pgbouncer()
    raise SystemExit(f"pgbouncer: {path}" if path else f"No pgbouncer; run: {INSTALL_HINT}")
