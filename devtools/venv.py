"""The project's local virtual environment (``.venv``), created and installed on demand."""

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / "bin"


def ensure(extras: str = "test") -> Path:
    """Create ``.venv`` and install the project with ``extras``; skip when already up to date."""
    if sys.version_info < (3, 12):  # noqa: UP036 (dev.py may be started by an older python3)
        raise SystemExit(
            f"Python 3.12 or newer is needed (this is {sys.version.split()[0]}); "
            "run dev.py with python3.12 or newer."
        )
    stamp = VENV / f".installed-{extras}"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return BIN / "python"
    if not (BIN / "python").exists():
        print(f"Creating {VENV} ...", flush=True)
        venv.create(VENV, with_pip=True)
    print(f"Installing django-leasequeue[{extras}] into {VENV} ...", flush=True)
    subprocess.run(
        [
            BIN / "python",
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-e",
            f".[{extras}]",
        ],
        cwd=ROOT,
        check=True,
        env={**os.environ, "PIP_PROGRESS_BAR": "off"},
    )
    stamp.write_text(wanted)
    return BIN / "python"
