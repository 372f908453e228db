"""Debian packages for the dev tools, installed through apt-get when running as root: without
questions, and without starting the package's own service (the tests start their own)."""

import os
import shutil
import subprocess

_TIMEOUT = 900


def run_quietly(command: list, purpose: str, timeout: float = _TIMEOUT) -> bool:
    """Run an installing ``command``, saying so (``purpose``: what it installs for); whether it
    succeeded."""
    print(f"Installing {purpose}: {' '.join(map(str, command))}", flush=True)
    # RUNLEVEL=1: a package's post-install script does not start its service.
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "RUNLEVEL": "1"}
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def install(package: str, purpose: str, *, recommends: bool = True) -> bool:
    """Install a Debian package; False when not root, without apt-get, or when it fails. The
    package lists are refreshed once when the first try fails (a fresh machine has none)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    command = ["apt-get", "install", "-y", "-q"]
    if not recommends:
        command.append("--no-install-recommends")
    command.append(package)
    return run_quietly(command, purpose) or (
        run_quietly(["apt-get", "update", "-q"], purpose) and run_quietly(command, purpose)
    )
