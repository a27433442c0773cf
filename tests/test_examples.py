"""Every script in examples/ runs in CI, with the extras it declares, against a real server it starts itself."""

from __future__ import annotations

import ast
import os
import re
import signal
import struct
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# Which test runs each example: a new example without a test here fails test_every_example_is_run.
RUN_BY = {
    "agent_loop.py": "tests/test_tools_examples.py",
    "agents_sdk.py": "tests/test_tools_examples.py",
    "dashboard_demo.py": "tests/test_examples.py",
}


def test_every_example_is_run_and_declares_what_it_needs() -> None:
    assert {path.name for path in EXAMPLES.glob("*.py")} == set(RUN_BY)
    for name, test in RUN_BY.items():
        assert name in (ROOT / test).read_text(), f"{test} does not run {name}"
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["examples"]
    declared = {re.split(r"[<>=;\[ ]", requirement)[0] for requirement in extra}
    provided = {"openai": "openai", "agents": "openai-agents", "playwright": "playwright"}
    for path in EXAMPLES.glob("*.py"):
        source = path.read_text()
        doc = ast.get_docstring(ast.parse(source)) or ""
        assert '".[examples]"' in doc, f"{path.name}: its docstring does not say which extra it needs"
        for node in ast.walk(ast.parse(source)):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                top = name.split(".")[0]
                if top in provided:
                    assert provided[top] in declared, f"{path.name} imports {top}, not in the examples extra"


def test_dashboard_demo_makes_traffic_and_a_screenshot(tmp_path: Path) -> None:
    """The README's demo, with its --screenshot (Playwright on the system Chromium), shortened to a few seconds."""
    picture = tmp_path / "dashboard.png"
    result = subprocess.run([sys.executable, str(EXAMPLES / "dashboard_demo.py"), "--screenshot", str(picture),
                             "--seconds", "4"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"^dashboard: http://127\.0\.0\.1:\d+/llmsim/ui$", result.stdout, re.M), result.stdout
    counters = re.search(r"^counters: (.*)$", result.stdout, re.M)
    assert counters, result.stdout
    assert ast.literal_eval(counters[1])["requests"] > 0
    header = picture.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == (1920, 1080)


def test_killing_the_dashboard_demo_stops_its_server_too() -> None:
    """Issue 46, item 8: `kill PID` ended the script and left its server running under PID 1."""
    demo = subprocess.Popen([sys.executable, str(EXAMPLES / "dashboard_demo.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    children: list[str] = []
    try:
        assert demo.stdout is not None
        line = demo.stdout.readline()
        assert line.startswith("dashboard: http://127.0.0.1:"), line
        url = line.split()[1].removesuffix("/llmsim/ui")
        children = Path(f"/proc/{demo.pid}/task/{demo.pid}/children").read_text().split()
        assert children, "the demo runs its server as its child"
        demo.send_signal(signal.SIGTERM)
        assert demo.wait(timeout=30) == 128 + signal.SIGTERM
        for pid in children:
            deadline = time.monotonic() + 15
            while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not Path(f"/proc/{pid}").exists(), f"the server {pid} outlived the demo"
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/llmsim/health", timeout=2)
    finally:
        if demo.poll() is None:
            demo.kill()
        for pid in children:  # an orphan left by a failure here is ended, not left to the machine
            if Path(f"/proc/{pid}").exists():
                os.kill(int(pid), signal.SIGKILL)
