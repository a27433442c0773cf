"""Closed-loop load for the surface benches (bench.messages_bench, bench.gemini_bench): clients that each send the
same request again as soon as the last is answered, for a window, and what the server spent on them; the windows of
several loads alternating on one scripted server."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import yaml

from bench.common import cpu_seconds
from llmsim.testing import ServerProcess

Load = tuple[str, dict[str, object], bytes]  # (path, body, bytes every good answer holds: its end)


async def _client(session: aiohttp.ClientSession, url: str, body: dict[str, object], end: bytes,
                  deadline: float, done: list[int]) -> None:
    while time.perf_counter() < deadline:
        async with session.post(url, json=body) as response:
            data = await response.read()
        if response.status != 200 or end not in data:
            raise RuntimeError(f"{url}: {response.status} {data[-300:]!r}")
        done[0] += 1


async def _window(base: str, load: Load, clients: int, seconds: float) -> int:
    path, body, end = load
    done = [0]
    deadline = time.perf_counter() + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as session:
        await asyncio.gather(*(_client(session, base + path, body, end, deadline, done) for _ in range(clients)))
    return done[0]


def measure(server: ServerProcess, load: Load, clients: int, seconds: float) -> tuple[float, float]:
    """(answers per CPU-second of the server, answers per second) for one window."""
    assert server.process is not None
    before = cpu_seconds(server.process.pid)
    done = asyncio.run(_window(server.url, load, clients, seconds))
    used = cpu_seconds(server.process.pid) - before
    return done / max(used, 1e-3), done / seconds


@contextmanager
def scripted_server(answer: str) -> Iterator[ServerProcess]:
    """One speed-0 worker whose every answer is `answer` (a scenario that repeats its turn): the same text on
    every surface, so the surfaces' costs compare."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as file:
        yaml.safe_dump({"turns": [{"text": answer}], "on_exhausted": "repeat_last"}, file)
    try:
        with ServerProcess("--speed", "0", "--workers", "1", "--scenario", file.name) as server:
            yield server
    finally:
        Path(file.name).unlink(missing_ok=True)


def alternating(server: ServerProcess, loads: dict[str, Load], clients: int, seconds: float,
                rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Each load warmed (token caches, imports, first-use paths), then `rounds` windows of each in turn: a drift of
    the machine falls on every load alike."""
    for load in loads.values():
        measure(server, load, 2, min(0.3, seconds / 2))
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in loads}
    for _ in range(rounds):
        for name, load in loads.items():
            results[name].append(measure(server, load, clients, seconds))
    return results
