"""The client matrix on the newest release of every client: drift caught before users meet it.

    python tests/clients/newest.py [PYTEST ARGS...]

The pinned matrix (tests/clients/node's lockfile, the `clients` extra) says what was tested; this installs the
newest release of every package the matrix names (matrix.CLIENTS, and the Node clients' peers) in a temporary
folder, runs the same tests (tests/clients) against them, and prints the table with the versions it got. Nothing
of the checkout changes: the Node scripts run from a copy (LLMSIM_CLIENTS_NODE_DIR), the Python packages from a
virtual environment layered over the current one, whose packages (llmsim's own dependencies) stay underneath.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import matrix  # noqa: E402  (a script beside the tests it runs)


def _run(command: list[str], **kwargs: object) -> None:
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)  # type: ignore[call-overload]


def node_copy(folder: Path) -> Path:
    """The Node scripts with the newest release of each client (package.json's ranges replaced by `latest`)."""
    target = folder / "node"
    shutil.copytree(matrix.NODE_DIR, target, ignore=shutil.ignore_patterns("node_modules", "package-lock.json"))
    manifest = json.loads((target / "package.json").read_text())
    manifest["dependencies"] = {name: "latest" for name in manifest["dependencies"]}
    (target / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    _run(["npm", "install", "--no-audit", "--no-fund"], cwd=target)
    return target


def python_env(folder: Path) -> Path:
    """A virtual environment whose own packages (the clients, newest) come before the current environment's."""
    venv = folder / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    (Path(own) / "zz-llmsim-base.pth").write_text("\n".join(site.getsitepackages()) + "\n")  # after its own
    packages = sorted({package for language, names in matrix.CLIENTS.values() if language == "python"
                       for package in names} - set(matrix.APART) | set(matrix.UNLISTED))
    _run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", *packages])
    # pins below openai 3 (pyproject.toml's `clients` extra says why): installed apart, without their pins
    _run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "--no-deps", *matrix.APART])
    return python


def main(pytest_args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="llmsim-newest-") as scratch:
        folder = Path(scratch)
        node = node_copy(folder)
        python = python_env(folder)
        results = folder / "results.json"
        env = {**os.environ, "LLMSIM_CLIENTS_MATRIX": str(results), "LLMSIM_CLIENTS_NODE_DIR": str(node)}
        done = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", str(HERE), "-q",
                               "--ignore", str(HERE / "test_matrix.py"), *pytest_args], env=env, cwd=HERE.parent.parent)
        if not results.exists():
            print("no results: the run stopped before any client test", file=sys.stderr)
            return done.returncode or 1
        data = json.loads(results.read_text())
        print("\nNewest releases:\n")
        print(matrix.table(data))
        return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
