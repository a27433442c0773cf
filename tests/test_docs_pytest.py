"""The docs' pytest examples pass: each runs as a user runs it, its own file with the page's `file` blocks beside
it, plain `pytest` and the installed plugin's `llmsim` fixture (the convention: tests/test_docs.py). Apart from
tests/test_docs.py so that pytest-xdist runs the two files side by side."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from test_docs import PAGES, ROOT, Block, blocks


def _pytest_files() -> list[Block]:
    return [block for page in PAGES for block in blocks(page) if block.pytest_file and block.what != "skip"]


def _test_name(block: Block) -> str:
    found = re.search(r"^def (test_\w+)", block.body, re.M)
    assert found, block.where
    return found[1]


# Each pytest example in a folder of its own (the page's `file` blocks beside it, its tests run from there, as a
# user runs them from their project), all in one pytest session: one fixture server for all of them.
CHDIR = """import pathlib

import pytest


@pytest.fixture(autouse=True)
def _from_this_folder(monkeypatch):
    monkeypatch.chdir(pathlib.Path(__file__).parent)
"""


@pytest.fixture(scope="module")
def pytest_examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """`{"folder/test_x.py::test_name": outcome and output}` from one `pytest` run of every pytest example."""
    root = tmp_path_factory.mktemp("pytest-examples")
    files = []
    for number, block in enumerate(_pytest_files()):
        folder = root / f"example{number}"
        for other in blocks(block.page):
            if other.what == "file":
                (folder / other.arg).parent.mkdir(parents=True, exist_ok=True)
                (folder / other.arg).write_text(other.body)
        folder.mkdir(exist_ok=True)
        (folder / "conftest.py").write_text(CHDIR)
        first = block.body.splitlines()[0]
        name = first.removeprefix("# ").split()[0] if re.match(r"# test_\w+\.py", first) else "test_example.py"
        (folder / name).write_text(block.body)
        files.append(f"example{number}/{name}")
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "--import-mode=importlib", "-rA", "-q", *files], cwd=root, capture_output=True,
                            text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    outcomes = {}
    for line in result.stdout.splitlines():
        found = re.match(r"(PASSED|FAILED|ERROR) (example\d+/\S+::\w+)", line)
        if found:
            outcomes[found[2]] = found[1]
    outcomes["output"] = result.stdout[-6000:] + result.stderr[-2000:]
    return outcomes


def _pytest_params() -> list[Any]:
    return [pytest.param(number, block, id=f"{block.where}::{_test_name(block)}")
            for number, block in enumerate(_pytest_files())]


@pytest.mark.parametrize(("number", "block"), _pytest_params())
def test_pytest_examples_pass(number: int, block: Block, pytest_examples: dict[str, str]) -> None:
    """A pytest example runs as a user runs it: its own file, plain `pytest`, the installed plugin's fixture."""
    keys = [key for key in pytest_examples if key.startswith(f"example{number}/")]
    assert keys, f"{block.where}: pytest did not run it:\n{pytest_examples['output']}"
    failed = [key for key in keys if pytest_examples[key] != "PASSED"]
    assert not failed, f"{block.where}: {failed}\n{pytest_examples['output']}"
