from __future__ import annotations

import fcntl
import os
import shutil
import ssl
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import IO, Any

import openai
import pytest
from xdist.scheduler import LoadFileScheduling

import inprocess
from llmsim.testing import ServerProcess, stop_all

# Modules whose tests time a paced stream or a timer to the millisecond, and a test that fits a profile to the
# timing it records. Under pytest-xdist each runs alone: the other test processes finish the test they are in and
# wait until it is done, so it sees no more load than in one process (with four processes on 2 cores, two of the
# modules' tests failed in one of two runs; the fit, run beside test_mlx's decoding, fitted a TTFT of 0.01 ms).
# Two tests of seconds-long windows join them: the 3 s a cut response gets to write and store its end (it lost the
# chat's error chunk or the WebSocket's close code in 3 of 7 runs beside the heaviest modules), and the 10 s in which
# 40 clients' sockets must open (2 of 6).
ALONE = frozenset({"test_ticks.py", "test_sockets.py", "test_paced_writer.py",
                   "test_proxy_replay.py::test_profile_fit_recovers_the_upstream_profile",
                   "test_shutdown.py::test_past_the_graceful_timeout_streams_end_failed_and_stay_stored",
                   "test_stalls.py::test_a_client_that_hangs_up_frees_its_request"})
UNUSED_PLUGINS = "-p no:langsmith_plugin -p no:faker"  # as in pyproject.toml's addopts
LOCKS = "LLMSIM_TEST_LOCKS"  # the directory of the processes' lock files, made by the xdist controller
_turn: list[IO[str]] = []  # the lock files of this process's turn: shared for a test, exclusive for ALONE's
_alone: list[str] = []  # the entry of ALONE this process runs alone, while it does


# The longest modules go first (by their time in a run of this stop), so that none is started last and runs on
# while the other processes have finished (pyproject.toml's addopts keep xdist from reordering the files by their
# number of tests). The entries of ALONE go last, a test of ALONE apart from its module (AloneApart): each waits for
# the other processes' tests to end and stops them starting more, a wait best had once, at the end, where the
# processes run out of work anyway. Mid-run the wait lasted as long as the longest test then running: 5 to 16 s,
# in which up to three processes idled.
FIRST = ("test_bench.py", "test_proxy_replay.py", "test_aider.py", "test_redis.py", "test_batches_restarts.py",
         "test_stalls.py", "test_bench_stores.py", "test_sequences.py", "test_background.py", "test_docs.py",
         "test_metrics.py", "test_sqlite.py", "test_dashboard.py", "test_store_state.py", "test_batches.py",
         "test_bench_run.py", "test_messages_sdk_params.py", "test_bench_capacity.py", "test_shutdown.py",
         "test_disk_space.py", "test_plugin_cassettes.py", "test_opencode.py", "test_docs_site.py", "test_policy.py",
         "test_mlx.py", "test_bench_proxy.py", "test_examples.py", "test_plugin.py", "test_codex.py", "test_node.py")


# The area markers (`python -m pytest -m chat`), registered in pyproject.toml: a test file is in every area one of
# the words of its name names (test_messages_relay.py: messages and proxy), and tests/clients/ is `clients`. A file
# whose words name none is in the area of its first word (test_gemini.py: `gemini`), registered as it is met; a file
# that belongs elsewhere says so itself (`pytestmark = pytest.mark.store`).
AREAS = {
    "responses": {"responses", "conversations", "background", "reasoning", "structured", "tools", "tool", "item",
                  "shapes", "params", "event", "websocket", "json", "wire"},
    "chat": {"chat"},
    "messages": {"messages", "anthropic"},
    "chaos": {"faults", "ratelimit", "scenarios", "stalls"},
    "store": {"store", "sqlite", "redis"},
    "proxy": {"proxy", "replay", "relay", "cassettes"},
    "mlx": {"mlx"},
    "sim": {"text", "formats", "determinism", "rng", "token", "models"},
    "timing": {"latency", "profiles", "ticks", "paced"},
    "process": {"serve", "startup", "shutdown", "restarts", "sockets", "ticks", "fairness", "paced", "stalls"},
    "errors": {"error", "validation", "hostile", "fuzz", "bounds"},
    "security": {"security", "origins"},
    "metrics": {"metrics", "dashboard"},
    "dashboard": {"dashboard", "origins"},
    "docs": {"docs", "examples"},
    "bench": {"bench"},
    "plugin": {"plugin"},
    "layout": {"layout"},
}


def areas_of(path: Path) -> set[str]:
    words = set(path.stem.removeprefix("test_").split("_"))
    found = {area for area, names in AREAS.items() if words & names}
    if path.parent.name == "clients":
        found.add("clients")
    return found


def _mark_areas(config: pytest.Config, items: list[pytest.Item]) -> None:
    registered = {line.split(":")[0].split("(")[0] for line in config.getini("markers")}
    for item in items:
        explicit = {mark.name for mark in item.iter_markers()} & registered
        areas = areas_of(item.path) or explicit or {item.path.stem.removeprefix("test_").split("_")[0]}
        for area in sorted(areas - explicit):
            if area not in registered:
                config.addinivalue_line("markers", f"{area}: the tests of {item.path.name} and its kin")
                registered.add(area)
            item.add_marker(area)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _mark_areas(config, items)
    rank = {name: i for i, name in enumerate(FIRST)}
    last = len(FIRST) + 1
    items.sort(key=lambda item: last if _alone_as(item) else rank.get(item.path.name, len(FIRST)))  # stable


class AloneApart(LoadFileScheduling):
    """`--dist loadfile`, but a test of ALONE (all its parameters) is a unit of its own, so it can be run last
    rather than where its module is; its process sets up the module's fixtures again for it."""

    def _split_scope(self, nodeid: str) -> str:
        path, _, name = nodeid.partition("::")
        test = f"{path}::{name.split('[')[0]}"
        return test if test.rpartition("/")[2] in ALONE else super()._split_scope(nodeid)


@pytest.hookimpl(optionalhook=True)  # xdist's: unknown where it is switched off (`-p no:xdist`)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadFileScheduling | None:
    return AloneApart(config, log) if config.getoption("dist") == "loadfile" else None


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        os.environ[LOCKS] = tempfile.mkdtemp(prefix="llmsim-tests-")  # the workers, started later, inherit it
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        # With bytecode never written, each of the ~130 server processes (and each test process) compiled every
        # module it imports from source again: ~0.3 s of a core a start. It is written where Python puts it
        # (`__pycache__`, ignored by git), by this process too. Not to a cache outside the checkout
        # (PYTHONPYCACHEPREFIX): there the bytecode installers wrote is not found, and a fresh venv's packages
        # were compiled again, ~70 s of a CI run.
        sys.dont_write_bytecode = False
    if "no:langsmith_plugin" not in os.environ.get("PYTEST_ADDOPTS", ""):
        # The pytest runs the tests start (the plugin's, the docs' examples) skip them too (see pyproject.toml).
        os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} {UNUSED_PLUGINS}".strip()


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and LOCKS in os.environ:
        shutil.rmtree(os.environ.pop(LOCKS), ignore_errors=True)


def _locks(directory: str, mode: int) -> list[IO[str]]:
    """The gate, then the turn, in `mode`. The gate lets no new shared turn in while an exclusive one waits, so
    that one waits only for the tests already running; a shared turn leaves the gate once it has the turn."""
    gate, turn = (open(os.path.join(directory, name), "a") for name in ("gate", "turn"))  # noqa: SIM115  # held open past this call: closing lets the lock go
    fcntl.flock(gate, mode)
    fcntl.flock(turn, mode)
    if mode == fcntl.LOCK_SH:
        gate.close()
        return [turn]
    return [gate, turn]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """Each test, its fixtures' setup and teardown included, holds a shared turn; an entry of ALONE holds an
    exclusive one from its first test's call (its module's fixtures set up beside the other processes' tests,
    which they were before it ran apart) to its last test's teardown."""
    directory = os.environ.get(LOCKS)
    if directory is None:
        return (yield)
    if not _alone:
        _turn[:] = _locks(directory, fcntl.LOCK_SH)
    try:
        return (yield)
    finally:
        entry = _alone_as(item)
        if not (_alone and nextitem is not None and _alone_as(nextitem) == entry):
            for lock in _turn:
                lock.close()  # closing the file lets its lock go
            _turn[:], _alone[:] = [], []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    directory = os.environ.get(LOCKS)
    entry = _alone_as(item)
    if directory is not None and entry and not _alone:
        for lock in _turn:
            lock.close()
        _turn[:] = _locks(directory, fcntl.LOCK_EX)
        _alone.append(entry)
    return (yield)


def _alone_as(item: pytest.Item) -> str | None:
    """The entry of ALONE that the test is run alone by: its module, or itself (all its parameters)."""
    for name in (item.path.name, f"{item.path.name}::{getattr(item, 'originalname', item.name)}"):
        if name in ALONE:
            return name
    return None


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester drops PYTEST_ADDOPTS for the runs it starts: they get the unused plugins' switch-off back, with
    xdist's, hypothesis' and anyio's, which no inner test uses (an inner run's start costs a core ~1.7 s with them,
    ~0.35 s without)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", f"{UNUSED_PLUGINS} -p no:xdist -p no:hypothesispytest -p no:anyio")
    return pytester


@pytest.fixture(scope="session", autouse=True)
def one_tls_context() -> Iterator[None]:
    """httpx (and httpx2, the SDKs' own since openai 3) makes a TLS context for every client, loading a CA file:
    17-30 ms of a core for each `httpx.get` and each SDK client a test makes, though they talk plain http. Here the
    default one is made once for each CA setting it reads (as the pytest plugin's clients share one); any other
    `verify` still gets its own."""
    import importlib

    contexts: dict[tuple[str, bool, str | None, str | None], ssl.SSLContext] = {}
    patched = []
    for name in ("httpx._transports.default", "httpx2._transports.default"):
        try:
            transports = importlib.import_module(name)
        except ImportError:
            continue
        made = transports.create_ssl_context

        def create(verify: object = True, cert: object = None, trust_env: bool = True, made: Any = made,
                   name: str = name) -> ssl.SSLContext:
            if verify is not True or cert is not None:
                return made(verify=verify, cert=cert, trust_env=trust_env)  # type: ignore[no-any-return]
            key = (name, trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
            if key not in contexts:
                contexts[key] = made(trust_env=trust_env)
            return contexts[key]

        transports.create_ssl_context = create
        patched.append((transports, made))
    yield
    for transports, made in patched:
        transports.create_ssl_context = made


def _server(request: pytest.FixtureRequest, flags: tuple[str, ...], env: dict[str, str] | None) -> ServerProcess:
    """A started server: in this process (tests/inprocess.py), or a process of its own for a test about the process
    (the `process` area, or a test marked so) and for flags or variables a process of its own must have."""
    about_process = "process" in areas_of(request.path) or request.node.get_closest_marker("process") is not None
    if about_process or not inprocess.fits(flags, env or {}):
        return ServerProcess("--speed", "0", *flags, env=env).start()
    return inprocess.InProcessServer("--speed", "0", *flags, env=env).start()


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    """The module's server at speed 0 (in this process: a start costs ~0.1 s, so each module has its own)."""
    started = _server(request, (), None)
    yield started
    started.stop()


@pytest.fixture(scope="session")
def llmsim_server(llmsim_flags: tuple[str, ...]) -> Iterator[ServerProcess]:
    """The pytest plugin's server (its `llmsim` fixture), here in this process."""
    with inprocess.InProcessServer(*llmsim_flags) as started:
        yield started


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)


@pytest.fixture
def start_server(request: pytest.FixtureRequest) -> Iterator[Callable[..., ServerProcess]]:
    """A server of the test's own, with extra flags; stopped after the test."""
    started: list[ServerProcess] = []

    def start(*flags: str, env: dict[str, str] | None = None) -> ServerProcess:
        started.append(_server(request, flags, env))
        return started[-1]

    yield start
    stop_all(started)


@pytest.fixture(scope="module")
def shared_server(request: pytest.FixtureRequest) -> Iterator[Callable[..., ServerProcess]]:
    """`start_server` for a module whose tests need no fresh server: one server per set of flags and environment,
    started at its first use and stopped after the module."""
    started: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], ServerProcess] = {}

    def start(*flags: str, env: dict[str, str] | None = None) -> ServerProcess:
        key = (flags, tuple(sorted((env or {}).items())))
        if key not in started:
            started[key] = _server(request, flags, env)
        return started[key]

    yield start
    stop_all(started.values())


@pytest.fixture
def sdk_client(start_server: Callable[..., ServerProcess]) -> Iterator[Callable[..., openai.OpenAI]]:
    """`sdk_client(server, api_key=..., **options)`: openai clients (no retries unless asked) closed before the
    test's servers stop, so a stop does not wait out idle keep-alive connections."""
    clients: list[openai.OpenAI] = []

    def make(server: ServerProcess, api_key: str = "sk-test", **options: object) -> openai.OpenAI:
        client = openai.OpenAI(base_url=server.base_url, api_key=api_key, **{"max_retries": 0, **options})
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
