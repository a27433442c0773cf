"""`llmsim serve` says "serving" only once requests are answered, and never when it cannot start."""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys
import types
import urllib.request
from pathlib import Path

import pytest

from llmsim import server, tokens
from llmsim.app import create_app
from llmsim.config import Settings
from llmsim.testing import ServerProcess, free_port


def _serve(port: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "llmsim", "serve", "--port", str(port), "--speed", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_serving_is_printed_once_the_server_answers() -> None:
    port = free_port()
    process = _serve(port)
    try:
        assert process.stdout is not None
        for line in process.stdout:  # the line comes once, as the server answers: no retry after it
            if "serving" in line:
                break
        assert line.strip() == f"llmsim: serving sim on http://127.0.0.1:{port}/openai/v1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/llmsim/health", timeout=5) as answer:
            assert answer.status == 200
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_server_of_two_workers_opens_no_control_socket(tmp_path: Path) -> None:
    """gunicorn (25.1 on) would open one in $XDG_RUNTIME_DIR or ~/.gunicorn, the same path for every server of
    the user's: a second server would take the first's, and anyone with the path could change its workers."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    with ServerProcess("--workers", "2", env=env) as served:
        assert urllib.request.urlopen(f"{served.url}/llmsim/health", timeout=5).status == 200
        assert list(tmp_path.iterdir()) == []


def test_a_stopped_server_says_nothing_more() -> None:
    """SIGTERM (a Ctrl-C, a container stopped) ends every worker quietly: no traceback at the interpreter's exit."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "llmsim", "serve", "--port", str(port), "--workers", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    assert any("serving" in line for line in process.stdout)  # after a warning or two, by the environment
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/llmsim/health", timeout=5) as answer:
        assert answer.status == 200
    process.terminate()
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "Traceback" not in output and "Exception ignored" not in output, output


def test_serving_is_not_printed_when_the_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = _serve(taken.getsockname()[1])
        output, _ = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "serving" not in output
    assert "in use" in output


def test_a_worker_loads_the_default_encoding_before_its_first_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default profile's encoding is loaded when the worker is ready, before `gc.freeze`: the first request
    does not wait ~0.35 s for it. Another (cl100k, gpt-4-legacy's) loads when a request first needs it: most
    servers never do, and each start saves its ~0.15 s and ~27 MB."""
    app = create_app(Settings())
    catalog = app.extensions["llmsim"].catalog
    wanted = {profile.encoding for profile in (*catalog.profiles, catalog.default)}
    assert wanted == {"o200k_base", "cl100k_base"}  # the shipped profiles use both
    built: list[str] = []  # the encodings built, each reading its ranks once
    read = tokens.load_ranks
    monkeypatch.setattr(tokens, "load_ranks", lambda name: built.append(name) or read(name))
    frozen: list[list[str]] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(list(built)))
    monkeypatch.setattr(gc, "set_threshold", lambda *_: None)
    tokens.encoding.cache_clear()
    server._ready(types.SimpleNamespace(wsgi=app, age=2))
    assert frozen == [[catalog.default.encoding]] == [["o200k_base"]]
    assert tokens.count("hello world", "cl100k_base") == 2  # loaded when first needed
    assert built == ["o200k_base", "cl100k_base"]
