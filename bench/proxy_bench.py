"""`python bench/proxy_bench.py`: what `--backend proxy` adds, direct to an upstream LLMSim against through a
proxy in front of it, at 1 and 100 concurrent streams.

- TTFT: the upstream paced at speed 1 and seeded, every request the same, so each has the same TTFT
  upstream; the p50 through the proxy minus the p50 direct is the proxy's cost. Goal: under 2 ms.
- Throughput: the upstream at speed 0, streamed tokens per second (closed-loop clients) through the proxy
  against direct. Goal: under 5 % lost.

Pinning (so the figure is the proxy's cost, not the machine's): the upstreams run alone on `--server-cpu`;
the proxies and the load generator share `--client-cpu`. The direct runs keep the same pinning (upstream on
one core, generator on the other), so the only difference between a direct and a proxied row is the proxy,
and the proxy takes its CPU from the generator's core, never from the upstream's. At speed 0 the upstream
is CPU-bound on its core: a proxy that costs little per byte leaves its throughput as it was, one that
costs much starves the generator beside it or adds latency. The generator only counts event boundaries
in the bytes it reads (bench/load.py), one process, so it needs little of the core it shares.

The floor: each figure is also taken through bench/bare_forwarder.py, the cheapest forwarder on the same
stack (gunicorn + gevent, the same urllib3 pool, the upstream's bytes relayed unread), pinned like the proxy.
What it adds is what any Python HTTP hop costs here; LLMSim's figure above it is LLMSim's own. The goal stays
defined against the upstream direct.

Direct, bare and proxied runs alternate in one process, against the same upstream; compare the ratios of one
run and note the load average (printed): on a busy machine the figures are the machine's as much as LLMSim's.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from llmsim.testing import ServerProcess, free_port  # noqa: E402
from load import Plan, run  # noqa: E402
from run import machine, pin, quantile, table  # noqa: E402

PROMPT = "Tell me a story about a lighthouse keeper."
GOAL_TTFT_MS, GOAL_LOSS = 2.0, 0.05


def measure(base_url: str, clients: int, args: argparse.Namespace) -> tuple[float, float, int]:
    """(TTFT p50 ms, streamed tokens/s, failed requests) over the measured window."""
    body = {"model": args.model, "input": PROMPT, "stream": True, "text": {"verbosity": args.verbosity}}
    plan = Plan(f"{base_url}/responses", body, {}, clients, warmup=args.warmup, window=args.window, stream=True)
    samples, _ = run(plan, processes=min(args.processes, clients))
    begin, end = plan.warmup, plan.warmup + plan.window
    ttfts = [s.ttft_ms for s in samples if s.start >= begin and s.ttft is not None and s.ttft <= end]
    tokens = sum(1 for s in samples for t in s.deltas if begin <= t <= end)
    failed = sum(1 for s in samples if s.start >= begin and s.end is not None and not s.ok)
    return quantile(ttfts, 0.5), tokens / plan.window, failed  # type: ignore[arg-type]


@contextmanager
def bare_forwarder(upstream: str, workers: int) -> Iterator[str]:
    """bench/bare_forwarder.py in front of `upstream`, running; its base URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(ROOT / "bench" / "bare_forwarder.py"), str(port), upstream,
                                str(workers)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the bare forwarder did not start") from None
                time.sleep(0.05)
        time.sleep(0.5)  # the master listens before its worker has loaded the app
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=lambda v: [int(x) for x in v.split(",")], default=[1, 100])
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--verbosity", default="low", help="text.verbosity: how long each stream is")
    parser.add_argument("--window", type=float, default=10.0, help="seconds measured per row")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds over which the clients start")
    parser.add_argument("--workers", type=int, default=1, help="gunicorn workers of each server")
    parser.add_argument("--processes", type=int, default=1, help="client processes")
    parser.add_argument("--server-cpu", type=int, default=0, help="the upstreams' core (-1: any)")
    parser.add_argument("--client-cpu", type=int, default=1, help="the proxies' and the load's core (-1: any)")
    args = parser.parse_args()
    two = (os.cpu_count() or 1) >= 2
    upstream_cpu = args.server_cpu if args.server_cpu >= 0 and two else None
    client_cpu = args.client_cpu if args.client_cpu >= 0 and two else None
    if client_cpu is not None:
        os.sched_setaffinity(0, {client_cpu})  # the proxies and the load processes start from this one
    print(f"machine at the start: {machine()}")
    print(f"pinning: upstreams on core {upstream_cpu if upstream_cpu is not None else 'any'}, proxies and load "
          f"generator ({args.processes} process) on core {client_cpu if client_cpu is not None else 'any'}")
    workers = ("--workers", str(args.workers))
    rows = []
    with ServerProcess("--speed", "1", "--seed", "1", *workers) as paced, \
            ServerProcess("--speed", "0", *workers) as fast, \
            ServerProcess("--backend", "proxy", "--upstream", paced.base_url, *workers) as paced_proxy, \
            ServerProcess("--backend", "proxy", "--upstream", fast.base_url, *workers) as fast_proxy, \
            bare_forwarder(paced.base_url, args.workers) as paced_bare, \
            bare_forwarder(fast.base_url, args.workers) as fast_bare:
        for upstream in (paced, fast):
            assert upstream.process is not None
            pin(upstream.process.pid, upstream_cpu)
        for clients in args.clients:
            ttft_direct, _, failed_a = measure(paced.base_url, clients, args)
            ttft_bare, _, failed_b = measure(paced_bare, clients, args)
            ttft_proxy, _, failed_c = measure(paced_proxy.base_url, clients, args)
            _, rate_direct, failed_d = measure(fast.base_url, clients, args)
            _, rate_bare, failed_e = measure(fast_bare, clients, args)
            _, rate_proxy, failed_f = measure(fast_proxy.base_url, clients, args)
            failed = failed_a + failed_b + failed_c + failed_d + failed_e + failed_f
            for via, ttft, rate in (("bare forwarder", ttft_bare, rate_bare), ("LLMSim proxy", ttft_proxy,
                                                                                  rate_proxy)):
                added, loss = ttft - ttft_direct, 1 - rate / rate_direct
                goals = via == "LLMSim proxy"
                rows.append([str(clients), via, f"{ttft_direct:.1f}", f"{ttft:.1f}", f"{added:+.1f}",
                             ("yes" if added < GOAL_TTFT_MS else "NO") if goals else "", f"{rate_direct:.0f}",
                             f"{rate:.0f}", f"{loss * 100:+.1f}%", ("yes" if loss < GOAL_LOSS else "NO") if goals
                             else "", str(failed) if goals else ""])
                print("  ", " ".join(rows[-1]), flush=True)
    print(table(["streams", "through", "TTFT p50 direct ms", "through ms", "added ms", f"< {GOAL_TTFT_MS:.0f} ms",
                 "tokens/s direct", "through", "lost", f"< {GOAL_LOSS:.0%}", "failed"], rows))
    print("goals are LLMSim's; the bare forwarder (bench/bare_forwarder.py) is the floor of any HTTP hop here")
    print(f"machine at the end: {machine()}")


if __name__ == "__main__":
    main()
