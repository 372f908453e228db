"""A real ASGI server (daphne) serving the test project, pointed at the test database."""

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from devtools.services import free_port
from tests.acceptance.harness import ROOT, test_database_url, wait_until
from tests.support.processes import popen_options


class Daphne:
    def __init__(
        self,
        log_path: Path,
        port: int | None = None,
        *,
        database_url: str | None = None,
        settings: str = "tests.support.settings",
        application: str = "tests.support.asgi:application",
        env: dict[str, str] | None = None,
        ready_path: str = "/static/leasequeue/progress.js",
    ) -> None:
        """``ready_path``: the URL that answers 200 once the server serves the application."""
        self.port = port or free_port()
        self.log_path = log_path
        self.database_url = database_url
        self.settings = settings
        self.application = application
        self.env = env or {}
        self.ready_path = ready_path
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Daphne":
        env = {
            **os.environ,
            **self.env,
            "DJANGO_SETTINGS_MODULE": self.settings,
            "DATABASE_URL": self.database_url or test_database_url(),
            "PYTHONPATH": str(ROOT),
        }
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "daphne",
                    "-b",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    self.application,
                ],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                **popen_options(env),
            )
        wait_until(self._serving, 20, f"daphne on port {self.port}")
        return self

    def _serving(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.log()
        try:
            with urllib.request.urlopen(f"{self.url}{self.ready_path}", timeout=1):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
