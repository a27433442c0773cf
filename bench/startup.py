"""`python -m bench.startup`: how soon LLMSim is there, and what it costs when it is not used (issue 35, item 5).

(1) `llmsim serve --speed 0`: seconds from the command to its first answer (a `POST /v1/responses`), the CPU its
    processes spent to get there, and its idle memory (RSS and PSS, after that request: of its one process, or of
    gunicorn's master and its workers with --workers N); beside aimock's start (`--aimock DIR`: a folder where
    `npm install @copilotkit/aimock` ran) to its first chat completion. Goals: first answer within 1 s, idle
    memory about half of 231 MB.
(2) The pytest fixture, in a real pytest run: the session's start (the first test's setup: the `llmsim_server`
    fixture's server and the first handle) and each later test's setup and teardown (`llmsim`: a handle, its reset
    before the test and after), goals 1 s and 50 ms.
(3) An installed but unused plugin: the CPU a Python that imports pytest and then the plugin spends beyond one
    that imports only pytest, as pytest does at every run in the environment (goal: under 50 ms); Faker's own
    plugin, which comes with llmsim's dependency on Faker, measured the same way.

The medians of `--runs` runs each; wall times on a busy machine are the machine's as much as LLMSim's, the CPU
figures less so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # `python bench/startup.py`: the repository's root on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.common import children, goal, machine, parse, smoke  # noqa: E402
from llmsim.testing import free_port  # noqa: E402

IDLE_MB_BEFORE = 231  # issue 35's figure for main before this bench: the goal is about half


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def processes(figures: dict[str, float]) -> str:
    if not figures["children_rss"]:
        return "one process: one worker serves in it"
    return f"master + workers; RSS: master {figures['master_rss']:.0f} MB, workers {figures['children_rss']:.0f} MB"


def _memory_mb(pid: int) -> dict[str, float]:
    """RSS and PSS (shared pages split between the processes that share them) of a process and of its children
    (gunicorn's workers, when it is their master), each and together."""
    figures = {"rss": 0.0, "pss": 0.0, "master_rss": 0.0, "children_rss": 0.0}
    for task in [pid, *children(pid)]:
        try:
            with open(f"/proc/{task}/smaps_rollup") as f:
                fields = {line.split()[0]: int(line.split()[1]) / 1024 for line in f if line.split()[0] in (
                    "Rss:", "Pss:")}
        except OSError:
            continue
        figures["rss"] += fields.get("Rss:", 0)
        figures["pss"] += fields.get("Pss:", 0)
        figures["master_rss" if task == pid else "children_rss"] += fields.get("Rss:", 0)
    return figures


def _post(url: str, body: dict[str, object]) -> bytes:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read()


def first_answer(command: list[str], ask: Callable[[], bytes], timeout: float = 60) -> dict[str, float]:
    """Starts `command`, asks until an answer comes (a refused connection: again after 5 ms), then reads the idle
    memory, stops it (SIGINT) and counts the CPU it spent, its children's included."""
    cpu = _children_cpu()
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[:3]} exited with {process.returncode}")
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"{command[:3]} did not answer within {timeout:g} s")
            try:
                ask()
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.005)
        answered = time.monotonic() - started
        time.sleep(0.2)  # its first answer written and settled
        memory = _memory_mb(process.pid)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return {"answer": answered, "cpu": _children_cpu() - cpu, **memory}


def llmsim_start() -> dict[str, float]:
    port = free_port()
    command = [sys.executable, "-m", "llmsim", "serve", "--port", str(port), "--speed", "0"]
    return first_answer(command, lambda: _post(f"http://127.0.0.1:{port}/openai/v1/responses",
                                               {"model": "gpt-4o", "input": "hello"}))


def aimock_start(folder: Path) -> dict[str, float]:
    package = folder / "node_modules" / "@copilotkit" / "aimock"
    port = free_port()
    command = ["node", str(package / "dist" / "cli.js"), "--port", str(port), "--log-level", "silent",
               "--fixtures", str(package / "fixtures" / "example-greeting.json")]
    return first_answer(command, lambda: _post(f"http://127.0.0.1:{port}/v1/chat/completions", {
        "model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}))


TIMING_CONFTEST = """
import json, os, time
import pytest

phases = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    began = time.monotonic()
    try:
        return (yield)
    finally:
        phases.append(["setup", time.monotonic() - began])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    began = time.monotonic()
    try:
        return (yield)
    finally:
        phases.append(["teardown", time.monotonic() - began])


def pytest_sessionfinish(session):
    with open(os.environ["STARTUP_PHASES"], "w") as out:
        json.dump(phases, out)
"""


def fixture_costs(tests: int) -> tuple[float, list[float]]:
    """A real pytest run of `tests` tests that each use the `llmsim` fixture (the plugin alone): the
    first test's setup is the session's start; each later test's setup and teardown is a test's cost (the last
    one's teardown, which stops the server, left out). Seconds."""
    with tempfile.TemporaryDirectory(prefix="llmsim-startup-") as folder:
        (Path(folder) / "conftest.py").write_text(TIMING_CONFTEST)
        (Path(folder) / "test_fixture.py").write_text(
            f"import pytest\n\n\n@pytest.mark.parametrize('n', range({tests}))\n"
            "def test_uses_the_fixture(llmsim, n):\n    assert llmsim.transcript == []\n")
        phases = Path(folder) / "phases.json"
        # Only llmsim's plugin: the environment's others (hypothesis, langsmith...) cost seconds a run, not timed
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "llmsim.pytest_plugin",
                        folder], cwd=folder, check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "STARTUP_PHASES": str(phases), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        setups = [seconds for phase, seconds in json.loads(phases.read_text()) if phase == "setup"]
        teardowns = [seconds for phase, seconds in json.loads(phases.read_text()) if phase == "teardown"]
    return setups[0], [setup + teardown for setup, teardown in zip(setups[1:], teardowns[:-1], strict=False)]


def fixture_cpu(runs: int) -> float:
    """The CPU a one-test session spends on the `llmsim` fixture (the pytest process and its server): a run whose
    test uses it less one whose test does not, taking turns; the median of `runs` differences. Seconds."""
    spent: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="llmsim-startup-") as folder:
        for uses in (True, False):
            (Path(folder) / f"test_{uses}.py").write_text(
                "def test_one(llmsim):\n    assert llmsim.transcript == []\n" if uses else
                "def test_one():\n    pass\n")
        for _ in range(runs):
            for uses in (True, False):
                cpu = _children_cpu()
                subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                                "llmsim.pytest_plugin", f"test_{uses}.py"], cwd=folder, check=True,
                               stdout=subprocess.DEVNULL, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
                spent[uses].append(_children_cpu() - cpu)
    return statistics.median(a - b for a, b in zip(spent[True], spent[False], strict=True))


def import_cpu(code: str) -> float:
    cpu = _children_cpu()
    subprocess.run([sys.executable, "-c", code], check=True)
    return _children_cpu() - cpu


def plugin_costs(runs: int) -> dict[str, float]:
    """Medians of CPU seconds beyond `import pytest`, the three imports taking turns so that load hits them alike."""
    codes = {"pytest": "import pytest", "llmsim": "import pytest, llmsim.pytest_plugin",
             "faker": "import pytest, faker.contrib.pytest.plugin"}
    spent: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(runs):
        for name, code in codes.items():
            spent[name].append(import_cpu(code))
    base = statistics.median(spent["pytest"])
    return {name: statistics.median(values) - base for name, values in spent.items() if name != "pytest"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="starts of each server, and plugin imports x3")
    parser.add_argument("--tests", type=int, default=50, help="tests whose fixture cost is measured")
    parser.add_argument("--aimock", type=Path, default=os.environ.get("AIMOCK_DIR"),
                        help="a folder with node_modules/@copilotkit/aimock (AIMOCK_DIR); unset: aimock not run")
    parser.add_argument("--imports", type=int, default=None,
                        help="imports of each kind in (3) (default: 3 x --runs: each is a few ms, the noisiest figure)")
    smoke(parser, runs=1, tests=5, imports=1)
    args = parse(parser)
    print(f"startup: {machine()}, median of {args.runs} run(s)")

    starts = [llmsim_start() for _ in range(args.runs)]
    figures = {key: statistics.median(run[key] for run in starts) for key in starts[0]}
    print(f"(1) llmsim serve --speed 0: first answer {figures['answer']:.2f} s, {figures['cpu']:.2f} s CPU, "
          f"idle memory {figures['rss']:.0f} MB RSS / {figures['pss']:.0f} MB PSS ({processes(figures)})")
    if args.aimock and (args.aimock / "node_modules" / "@copilotkit" / "aimock").is_dir():
        runs = [aimock_start(args.aimock) for _ in range(args.runs)]
        mock = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        print(f"    aimock: first answer {mock['answer']:.2f} s, {mock['cpu']:.2f} s CPU, idle memory "
              f"{mock['rss']:.0f} MB RSS / {mock['pss']:.0f} MB PSS; llmsim/aimock first answer "
              f"{figures['answer'] / mock['answer']:.1f}x")
    else:
        print("    aimock: not run (npm install @copilotkit/aimock in a folder, then --aimock FOLDER)")
    print(goal("first answer", figures["answer"], 1.0, " s", higher=False))
    print(goal("CPU to the first answer", figures["cpu"], 0.8, " s", higher=False))
    print(goal("idle memory (RSS)", figures["rss"], IDLE_MB_BEFORE / 2, " MB", higher=False))

    if importlib.util.find_spec("openai") is None:  # the fixture's handle makes the SDK's clients
        print("(2) pytest fixture: not run (the llmsim fixture needs the openai package: pip install openai)")
    else:
        session, per_test = fixture_costs(args.tests)
        reset_ms = statistics.median(per_test) * 1000
        session_cpu = fixture_cpu(args.runs)
        print(f"(2) pytest fixture: session start {session:.2f} s, {session_cpu:.2f} s CPU (the session's, server "
              f"included, beyond a session without it), each test {reset_ms:.1f} ms (setup and teardown; median of "
              f"{len(per_test)})")
        print(goal("session start (wall, an idle machine's goal)", session, 1.0, " s", higher=False))
        print(goal("session start CPU", session_cpu, 2.0, " s", higher=False))
        print(goal("per-test reset", reset_ms, 20, " ms", higher=False))

    plugins = plugin_costs(args.imports or args.runs * 3)
    print(f"(3) an unused plugin, CPU beyond `import pytest`: llmsim {plugins['llmsim'] * 1000:.0f} ms, "
          f"Faker's {plugins['faker'] * 1000:.0f} ms")
    print(goal("llmsim plugin", plugins["llmsim"] * 1000, 50, " ms", higher=False))


if __name__ == "__main__":
    main()
