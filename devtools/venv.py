"""The project's local virtual environments, created and installed on demand: ``.venv`` with the
newest Django, and ``.venv-django<series>`` with an older supported series (e.g. 5.2)."""

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / "bin"


def ensure(extras: str = "test", django: str | None = None) -> Path:
    """Create the environment and install the project with ``extras`` (and, when given, the
    newest release of Django ``django``, e.g. "5.2"); skip when already up to date."""
    if sys.version_info < (3, 12):  # noqa: UP036 (dev.py may be started by an older python3)
        raise SystemExit(
            f"Python 3.12 or newer is needed (this is {sys.version.split()[0]}); "
            "run dev.py with python3.12 or newer."
        )
    home = VENV if django is None else ROOT / f".venv-django{django}"
    python = home / "bin" / "python"
    stamp = home / f".installed-{extras}"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        print(f"Creating {home} ...", flush=True)
        venv.create(home, with_pip=True)
    series = [] if django is None else [f"django~={django}.0"]
    print(f"Installing django-leasequeue[{extras}] {' '.join(series)} into {home} ...", flush=True)
    env = {**os.environ, "PIP_PROGRESS_BAR": "off", "VIRTUAL_ENV": str(home)}
    # uv resolves and installs in about 15 s what pip took 60 s (and 47 s of CPU) for; it comes
    # from PyPI into the environment itself, so nothing outside the checkout changes. Compiled
    # to bytecode at install, as pip does: with PYTHONDONTWRITEBYTECODE set (as on some CI
    # machines), every process of the suite would otherwise compile Django afresh.
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "uv"], cwd=ROOT, check=True, env=env)
    uv = [home / "bin" / "uv", "pip", "install", "--quiet", "--python", python]
    subprocess.run(
        [*uv, "--compile-bytecode", "-e", f".[{extras}]", *series], cwd=ROOT, check=True, env=env
    )
    stamp.write_text(wanted)
    return python
