"""Closed-loop load for the surface benches (bench.messages_bench, bench.gemini_bench): clients that each send the
same request again as soon as the last is answered, for a window, and what the server spent on them."""

from __future__ import annotations

import asyncio
import time

import aiohttp

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
