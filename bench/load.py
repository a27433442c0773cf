"""The load generator: closed-loop clients, several processes when one client core is not enough.

Streams go through a bare asyncio Protocol (bench/sse_client.py), cheap enough for hundreds of paced
streams on one core; JSON requests through aiohttp.

Each client sends one request, reads the whole answer, and sends the next, until the
window ends. Streams are timed as bytes arrive: TTFT is the first `output_text.delta`
event after the request was sent, inter-token gaps are between consecutive ones.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import aiohttp

from bench.common import DELTA
from bench.sse_client import StreamClient

START = 1.0  # seconds from measure() to the clients' start, as the client processes fork: a bench's CPU marks count it


@dataclass
class Sample:
    """One request, times in seconds from the run's start; filled in as its bytes arrive."""

    start: float
    end: float | None = None  # None: still running when the window closed
    ok: bool = False
    ttft: float | None = None  # when the first text delta arrived
    deltas: list[float] = field(default_factory=list)  # when each text delta arrived (the first included)

    @property
    def latency_ms(self) -> float:
        return ((self.end or self.start) - self.start) * 1000

    @property
    def ttft_ms(self) -> float | None:
        return None if self.ttft is None else (self.ttft - self.start) * 1000

    def gaps_ms(self, after: float, before: float) -> list[float]:
        """Inter-token gaps whose second token arrived inside [after, before]."""
        return [(b - a) * 1000 for a, b in zip(self.deltas, self.deltas[1:], strict=False) if after <= b <= before]


@dataclass
class Plan:
    url: str
    body: dict[str, Any]
    headers: dict[str, str]
    clients: int
    warmup: float  # clients start spread over this many seconds; samples count only after it
    window: float  # seconds measured after the warm-up
    stream: bool
    client: str = "raw"  # streams: "raw" (bench/sse_client.py) or "aiohttp" (to compare the two)


async def _request(session: aiohttp.ClientSession, plan: Plan, origin: float, sample: Sample) -> None:
    try:
        async with session.post(plan.url, json=plan.body, headers=plan.headers) as response:
            if plan.stream:
                tail = b""
                async for chunk in response.content.iter_any():
                    now = time.perf_counter() - origin
                    data = tail + chunk
                    sample.deltas.extend([now] * data.count(DELTA))
                    if sample.ttft is None and sample.deltas:
                        sample.ttft = now
                    tail = data[-len(DELTA) + 1:]
                sample.ok = response.status == 200 and bool(sample.deltas)
            else:
                await response.read()
                sample.ok = response.status == 200
    except aiohttp.ClientError:
        sample.ok = False
    sample.end = time.perf_counter() - origin


async def _streamed(client: StreamClient, origin: float, sample: Sample) -> None:
    try:
        sample.ok = await client.post(sample.deltas) and bool(sample.deltas)
    except OSError:
        sample.ok = False
    sample.end = time.perf_counter() - origin


async def _client(index: int, plan: Plan, origin: float, samples: list[Sample], open_streams: list[int]) -> None:
    await asyncio.sleep(plan.warmup * index / max(1, plan.clients))
    deadline = origin + plan.warmup + plan.window
    if plan.stream and plan.client == "raw":
        await _stream_client(plan, origin, deadline, samples, open_streams)
        return
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
        while (left := deadline - time.perf_counter()) > 0:
            sample = Sample(time.perf_counter() - origin)
            samples.append(sample)
            open_streams[0] += 1
            try:
                await asyncio.wait_for(_request(session, plan, origin, sample), left)
            except TimeoutError:
                break  # the window closed mid-request: what arrived so far still counts
            finally:
                open_streams[0] -= 1


async def _stream_client(plan: Plan, origin: float, deadline: float, samples: list[Sample],
                         open_streams: list[int]) -> None:
    client = StreamClient(plan.url, plan.body, plan.headers, origin)
    try:
        while (left := deadline - time.perf_counter()) > 0:
            sample = Sample(time.perf_counter() - origin)
            samples.append(sample)
            open_streams[0] += 1
            try:
                await asyncio.wait_for(_streamed(client, origin, sample), left)
            except TimeoutError:
                break  # the window closed mid-request: what arrived so far still counts
            finally:
                open_streams[0] -= 1
                sample.ttft = sample.deltas[0] if sample.deltas else None
    finally:
        client.close()


async def _watch(plan: Plan, origin: float, open_streams: list[int], seen: list[int], cpu: list[float]) -> None:
    """Open requests, sampled every 100 ms during the measured window; and this process's CPU seconds in it
    (a generator near a whole core is late reading, and its lateness would pass for the server's)."""
    await asyncio.sleep(max(0.0, origin + plan.warmup - time.perf_counter()))
    started = time.process_time()
    while time.perf_counter() < origin + plan.warmup + plan.window:
        seen.append(open_streams[0])
        await asyncio.sleep(0.1)
    cpu.append(time.process_time() - started)


async def _run(plan: Plan, origin_wall: float) -> tuple[list[Sample], list[int], float]:
    origin = time.perf_counter() + (origin_wall - time.time())  # a shared start across processes
    await asyncio.sleep(max(0.0, origin - time.perf_counter()))
    samples: list[Sample] = []
    open_streams: list[int] = [0]
    seen: list[int] = []
    cpu: list[float] = []
    await asyncio.gather(_watch(plan, origin, open_streams, seen, cpu),
                         *(_client(i, plan, origin, samples, open_streams) for i in range(plan.clients)))
    return samples, seen, sum(cpu)


def _process(args: tuple[Plan, float]) -> tuple[list[Sample], list[int], float]:
    return asyncio.run(_run(*args))


class Measured(NamedTuple):
    samples: list[Sample]  # every request (the caller picks the measured window)
    open_streams: list[int]  # open requests over time, all processes
    load_cpu: float  # the load's CPU in the window as a share of one core, all processes


def run(plan: Plan, processes: int = 1) -> tuple[list[Sample], list[int]]:
    """Every request (the caller picks the measured window), and the open requests over time (all processes)."""
    measured = measure(plan, processes)
    return measured.samples, measured.open_streams


def measure(plan: Plan, processes: int = 1) -> Measured:
    origin_wall = time.time() + START  # every process starts its clock together
    shares = [plan.clients // processes + (i < plan.clients % processes) for i in range(processes)]
    plans = [Plan(**{**plan.__dict__, "clients": n}) for n in shares if n]  # each staggers over the same warm-up
    with multiprocessing.get_context("fork").Pool(len(plans)) as pool:
        results = pool.map(_process, [(p, origin_wall) for p in plans])
    samples = [s for part, _, _ in results for s in part]
    counts = [list(seen) for _, seen, _ in results]
    length = min(len(c) for c in counts)
    return Measured(samples, [sum(c[i] for c in counts) for i in range(length)],
                    sum(c for _, _, c in results) / plan.window)
