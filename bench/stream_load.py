"""A cheap load of many open streams: raw asyncio protocols that count text deltas as bytes arrive.

bench/load.py's aiohttp clients cost a few tens of microseconds of Python per chunk; with hundreds of paced
streams on a 2-core machine that is a good part of a core, taken from the server it measures. Here each
chunk costs one `bytes.count` on uvloop's event loop: a stream is one HTTP/1.1 request with
`Connection: close`, so the server's closing the socket ends it and nothing parses the response.
"""

from __future__ import annotations

import asyncio
import functools
import json
import multiprocessing
import time
from urllib.parse import urlsplit

import uvloop

from bench import load
from bench.common import DELTA
from bench.load import Plan, Sample


class _Stream(asyncio.Protocol):
    def __init__(self, request: bytes, origin: float, sample: Sample, done: asyncio.Future[None]) -> None:
        self.request, self.origin, self.sample, self.done = request, origin, sample, done
        self.tail = b""
        self.first = True
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter() - self.origin
        if self.first:
            self.first = False
            self.sample.ok = data.startswith(b"HTTP/1.1 200")
        joined = self.tail + data
        count = joined.count(DELTA)
        if count:
            if self.sample.ttft is None:
                self.sample.ttft = now
            self.sample.deltas.extend([now] * count)
        self.tail = joined[-len(DELTA) + 1:]

    def connection_lost(self, exc: Exception | None) -> None:
        self.sample.end = time.perf_counter() - self.origin
        self.sample.ok = self.sample.ok and bool(self.sample.deltas)
        if not self.done.done():
            self.done.set_result(None)


def _request(plan: Plan) -> tuple[str, int, bytes]:
    url = urlsplit(plan.url)
    body = json.dumps(plan.body).encode()
    head = [f"POST {url.path} HTTP/1.1", f"Host: {url.netloc}", "Content-Type: application/json",
            f"Content-Length: {len(body)}", "Connection: close", *(f"{k}: {v}" for k, v in plan.headers.items())]
    return url.hostname or "127.0.0.1", url.port or 80, ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _client(index: int, plan: Plan, origin: float, samples: list[Sample]) -> None:
    loop = asyncio.get_running_loop()
    host, port, request = _request(plan)
    await asyncio.sleep(plan.warmup * index / max(1, plan.clients))
    deadline = origin + plan.warmup + plan.window
    while (left := deadline - time.perf_counter()) > 0:
        sample = Sample(time.perf_counter() - origin)
        samples.append(sample)
        done: asyncio.Future[None] = loop.create_future()
        try:
            transport, _ = await loop.create_connection(functools.partial(_Stream, request, origin, sample, done),
                                                        host, port)
        except OSError:
            sample.end = time.perf_counter() - origin
            continue
        try:
            await asyncio.wait_for(asyncio.shield(done), left)
        except TimeoutError:
            transport.close()
            break  # the window closed mid-stream: what arrived so far still counts


async def _run(plan: Plan, origin_wall: float) -> tuple[list[Sample], float]:
    origin = time.perf_counter() + (origin_wall - time.time())  # a shared start across processes
    await asyncio.sleep(max(0.0, origin - time.perf_counter()))
    samples: list[Sample] = []
    window: list[float] = []

    async def cpu() -> None:  # this process's CPU seconds in the measured window
        await asyncio.sleep(max(0.0, origin + plan.warmup - time.perf_counter()))
        started = time.process_time()
        await asyncio.sleep(max(0.0, origin + plan.warmup + plan.window - time.perf_counter()))
        window.append(time.process_time() - started)

    await asyncio.gather(cpu(), *(_client(i, plan, origin, samples) for i in range(plan.clients)))
    return samples, sum(window)


def _process(args: tuple[Plan, float]) -> tuple[list[Sample], float]:
    return uvloop.run(_run(*args))


def run(plan: Plan, processes: int = 1) -> tuple[list[Sample], float]:
    """Every stream (the caller picks the measured window), and the load's CPU in the window as a share of one
    core, all processes together."""
    origin_wall = time.time() + load.START
    shares = [plan.clients // processes + (i < plan.clients % processes) for i in range(processes)]
    plans = [Plan(**{**plan.__dict__, "clients": n}) for n in shares if n]
    with multiprocessing.get_context("fork").Pool(len(plans)) as pool:
        results = pool.map(_process, [(p, origin_wall) for p in plans])
    return [s for part, _ in results for s in part], sum(cpu for _, cpu in results) / plan.window
