"""Skips for tests of clients that are optional (`pytestmark = needs("anthropic")`): with only the [test] extra
installed the suite runs, and says what each skipped file needs. Modules are looked up, not imported: an SDK's
import costs seconds in every xdist process that collects the file."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

CLIENTS = 'pip install -e ".[clients]"'


def found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def needs(*modules: str, install: str = CLIENTS) -> pytest.MarkDecorator:
    missing = [module for module in modules if not found(module)]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}: {install}")


NODE_MODULES = Path(__file__).parent / "clients" / "node" / "node_modules"


def needs_node() -> pytest.MarkDecorator:
    """The Node clients: node, and the packages of tests/clients/node's lockfile."""
    missing = shutil.which("node") is None or not NODE_MODULES.is_dir()
    return pytest.mark.skipif(missing, reason="needs node and the Node clients: cd tests/clients/node && npm ci")
