"""Ready to publish: the version the CLI prints, the Dockerfile's promises (CI cannot build the image: its
machines pull no base image), and a landing README short enough to read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

from llmsim.testing import ServerProcess, free_port

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def test_llmsim_version_prints_the_package_version() -> None:
    result = subprocess.run([sys.executable, "-m", "llmsim", "--version"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"llmsim {PROJECT['version']}"


def test_the_package_says_its_licence_and_where_it_lives() -> None:
    assert PROJECT["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert PROJECT["authors"] and PROJECT["classifiers"] and PROJECT["readme"] == "README.md"
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(PROJECT["urls"])


def test_the_image_runs_the_wheel_as_a_non_root_user() -> None:
    assert "python -m build --wheel" in DOCKERFILE and "COPY --from=build /dist /dist" in DOCKERFILE
    users = re.findall(r"^USER (\S+)", DOCKERFILE, re.M)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r'^ENTRYPOINT \["llmsim"\]', DOCKERFILE, re.M)


def test_the_image_health_check_asks_the_server(shared_server: Callable[..., ServerProcess]) -> None:
    """The HEALTHCHECK's command, run here: 0 while the server answers /llmsim/health, not 0 with none there."""
    found = re.search(r"^\s*CMD (\[\"python\".*\])$", DOCKERFILE, re.M)
    assert found, "no exec-form HEALTHCHECK command"
    command = json.loads(found[1])
    server = shared_server()
    up = subprocess.run(command, env={**os.environ, "LLMSIM_PORT": str(server.port)}, timeout=30)
    assert up.returncode == 0
    free = free_port()  # a port nothing listens on
    down = subprocess.run(command, env={**os.environ, "LLMSIM_PORT": str(free)}, capture_output=True, timeout=30)
    assert down.returncode != 0


def test_the_readme_is_a_landing_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for heading in ("## Two commands", "## Quickstart: test an agent in CI with pytest",
                    "## Quickstart: chaos, injected 429s and retries", "## Quickstart: real local inference with MLX",
                    "## Quickstart: a demo with the live dashboard", "## Quickstart: a load test, and a fleet",
                    "## Features", "## Client compatibility", "## Getting help"):
        assert heading in readme
    for link in re.findall(r"\]\(((?:docs|bench)/[^)#]+)", readme):
        assert (ROOT / link).exists(), link
