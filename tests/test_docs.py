"""The docs' code runs: every block of README.md and docs/*.md is run or checked against a real server.

The convention (docs/contributing.md says it for writers):

- a ```python block runs, in page order, in one namespace per page that starts with `client`, an `openai.OpenAI`
  for the page's server; `127.0.0.1:8080` and `localhost:8080` in it mean that server. A block that defines
  `def test_...` is a pytest file instead (named by its first line, `# test_x.py`): it runs with pytest, and so
  with the `llmsim` fixture, in a folder holding the page's `file` blocks (tests/test_docs_pytest.py);
- a ```bash / ```console block's `curl` lines run against the page's server; its `llmsim ...` lines name only
  flags that `llmsim ... --help` lists, its `pip install` lines only extras that pyproject.toml declares, its
  `python -m bench.X` lines and `python` lines naming a script of examples/ only what exists;
- an HTML comment on the line before a block changes that: `<!-- test: skip REASON -->` (not run: it needs a
  model, an upstream, a cluster), `<!-- test: file PATH -->` (the block is written to PATH in the page's
  folder), `<!-- test: server -->` (the block's `llmsim serve ...` is started, with its own port, and the
  page's later blocks talk to it).

The page's default server runs `--speed 0`, as every server here does (a block's `--speed 0` is that server).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import openai
import pytest

from llmsim.testing import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
DIRECTIVE = re.compile(r"<!--\s*test:\s*(?P<what>skip|file|server)\b\s*(?P<arg>.*?)\s*-->")
SHELL = {"bash", "console", "sh", "shell"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str
    what: str = ""  # the directive: skip, file, server, or none
    arg: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def pytest_file(self) -> bool:
        return self.lang == "python" and re.search(r"^def test_", self.body, re.M) is not None


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        before = [line for line in text[:match.start()].splitlines() if line.strip()]
        directive = DIRECTIVE.search(before[-1]) if before else None
        body = "\n".join(line.removeprefix(match["indent"]) for line in match["body"].splitlines()) + "\n"
        found.append(Block(page, text.count("\n", 0, match.start()) + 1, match["lang"], body,
                           directive["what"] if directive else "", directive["arg"] if directive else ""))
    return found


def _local(text: str, server: ServerProcess) -> str:
    return re.sub(r"(127\.0\.0\.1|localhost):8080\b", f"127.0.0.1:{server.port}", text)


def _commands(body: str) -> Iterator[list[str]]:
    """Each simple command of a shell block, as words (continuations joined, comments and prompts dropped)."""
    for line in body.replace("\\\n", " ").splitlines():
        words = shlex.split(line.removeprefix("$ "), comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word in {"&&", "||", ";", "|", "&"}:
                if command:
                    yield command
                command = []
            else:
                command.append(word)


@cache
def _help(*command: str) -> str:
    result = subprocess.run([sys.executable, "-m", "llmsim", *command, "--help"], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert result.returncode == 0, f"llmsim {' '.join(command)} --help: {result.stderr}"
    return result.stdout


@cache
def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


def check_shell(block: Block, server: ServerProcess | None) -> None:
    for words in _commands(block.body):
        while words and ("=" in words[0] and not words[0].startswith("-") or words[0] in {"export", "sudo"}):
            words = words[1:]  # VAR=value prefixes
        if not words:
            continue
        name, args = words[0], words[1:]
        if name == "llmsim":
            command = [word for word in args[:2] if not word.startswith("-")]
            if len(command) == 2 and command[0] not in {"scenario", "profile"}:
                command = command[:1]
            listed = _help(*command)
            for flag in args:
                if flag.startswith("--"):
                    flag = flag.split("=")[0]
                    assert re.search(rf"(^|[\s,]){re.escape(flag)}\b", listed), \
                        f"{block.where}: `llmsim {' '.join(command)}` has no {flag}"
        elif name in {"pip", "pip3"} or args[:2] == ["-m", "pip"]:
            for spec in args:
                for extras in re.findall(r"\[([\w,-]+)\]", spec):
                    unknown = set(extras.split(",")) - _extras()
                    assert not unknown, f"{block.where}: pyproject.toml has no extra {unknown}"
        elif name in {"python", "python3"} and args:
            if args[0] == "-m" and args[1].startswith("bench."):
                assert (ROOT / "bench" / f"{args[1].removeprefix('bench.')}.py").exists(), block.where
            elif args[0].endswith(".py") and "/" in args[0] and not args[0].startswith("/"):
                assert (ROOT / args[0]).exists(), f"{block.where}: no {args[0]}"
        elif name == "curl":
            assert server is not None, f"{block.where}: curl with no server"
            line = _local(shlex.join(["curl", "--fail-with-body", "--max-time", "30", *args]), server)
            result = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, f"{block.where}: {line}\n{result.stdout}{result.stderr}"


def _server_flags(block: Block, folder: Path) -> list[str]:
    """The block's `llmsim serve` flags less --host, --port and --speed, its file names made absolute."""
    (words,) = [words for words in _commands(block.body) if words[:2] == ["llmsim", "serve"]]
    flags: list[str] = []
    skip = False
    for word in words[2:]:
        if skip:
            skip = False
        elif word in {"--port", "--host", "--speed"}:
            skip = True  # the test picks where; every server here runs at --speed 0
        else:
            flags.append(str(folder / word) if (folder / word).exists() else word)
    return flags


def _pages() -> list[Any]:
    return [pytest.param(page, id=str(page.relative_to(ROOT))) for page in PAGES]


@pytest.mark.parametrize("page", _pages())
def test_page_blocks_run(page: Path, shared_server: Callable[..., ServerProcess], tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    server = shared_server()
    namespace: dict[str, Any] = {"client": openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=2)}
    for block in blocks(page):
        if block.what == "skip":
            continue
        if block.what == "file":
            target = tmp_path / block.arg
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body)
            continue
        if block.what == "server":
            server = shared_server(*_server_flags(block, tmp_path))
            namespace["client"] = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=2)
            continue
        if block.lang == "python" and not block.pytest_file:
            try:
                exec(compile(_local(block.body, server), block.where, "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{block.where} failed: {exc!r}") from exc
        elif block.lang in SHELL:
            check_shell(block, server)


@pytest.mark.parametrize("body", ["llmsim serve --port 8080 --no-such-flag 1\n", 'pip install -e ".[no-such-extra]"\n',
                                  "python examples/no_such_example.py\n"])
def test_the_shell_checks_catch_what_does_not_exist(body: str) -> None:
    with pytest.raises(AssertionError):
        check_shell(Block(ROOT / "README.md", 1, "bash", body), None)


def test_every_serve_flag_has_its_row_in_the_options_page() -> None:
    """docs/options.md lists every `llmsim serve` flag in a table row that names its environment variable too,
    so a new flag cannot ship undocumented."""
    from llmsim.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    rows = [line for line in (ROOT / "docs" / "options.md").read_text().splitlines() if line.startswith("|")]
    missing = []
    for action in commands.choices["serve"]._actions:
        for flag in (s for s in action.option_strings if s.startswith("--") and s != "--help"):
            env = "LLMSIM_" + flag[2:].replace("-", "_").upper()
            if not any(re.search(rf"`{re.escape(flag)}[ `]", row) and env in row for row in rows):
                missing.append(f"{flag} ({env})")
    assert not missing, f"docs/options.md has no row naming these flags with their variable: {missing}"
