from __future__ import annotations

from collections.abc import Callable, Iterator

import openai
import pytest

from llmsim.testing import ServerProcess


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    with ServerProcess("--speed", "0") as process:
        yield process


@pytest.fixture(scope="session")
def client(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)


@pytest.fixture
def start_server() -> Iterator[Callable[..., ServerProcess]]:
    """A server of the test's own, with extra flags; stopped after the test."""
    started: list[ServerProcess] = []

    def start(*flags: str, env: dict[str, str] | None = None) -> ServerProcess:
        process = ServerProcess("--speed", "0", *flags, env=env).start()
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture(scope="module")
def shared_server() -> Iterator[Callable[..., ServerProcess]]:
    """`start_server` for a module whose tests need no fresh server: one server per set of flags and environment,
    started at its first use and stopped after the module (a start costs a core 1.5 s)."""
    started: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], ServerProcess] = {}

    def start(*flags: str, env: dict[str, str] | None = None) -> ServerProcess:
        key = (flags, tuple(sorted((env or {}).items())))
        if key not in started:
            started[key] = ServerProcess("--speed", "0", *flags, env=env).start()
        return started[key]

    yield start
    for process in started.values():
        process.stop()


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
