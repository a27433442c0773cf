"""`python -m bench.proxy_bench`: what `--backend proxy` adds, direct to an upstream LLMSim against through a
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

Direct, bare and proxied windows alternate in one process, against the same upstreams, `--repeats` rounds of
short windows as bench/stores.py does: a figure is the median of its windows, an added TTFT or a loss the median
of the rounds' (each round's windows are taken next to each other). Compare the ratios of one run and note the
load average (printed): on a busy machine the figures are the machine's as much as LLMSim's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import NamedTuple

if __package__ in (None, ""):  # `python bench/proxy_bench.py`: the repository's root on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import load  # noqa: E402
from bench.common import PROMPT, core, counts, load_on, machine, parse, pin, quantile, smoke, table  # noqa: E402
from bench.load import Plan, run  # noqa: E402
from bench.servers import forwarder, running  # noqa: E402
from llmsim.testing import ServerProcess  # noqa: E402

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


class Round(NamedTuple):
    """One side's windows in one round: its TTFT p50 (paced upstream) and its tokens/s (speed-0 upstream)."""

    ttft: float
    rate: float
    failed: int


def alternate(urls: dict[str, tuple[str, str]], clients: int, args: argparse.Namespace) -> dict[str, list[Round]]:
    """`--repeats` rounds of one short window per side (direct, bare forwarder, proxy), in alternating order: this
    machine drifts by more than the figures' margins within minutes (one long window per figure swung the loss
    from -79 % to +69 % in three runs), so a figure is a median of rounds and a ratio one of windows taken in
    the same round, next to each other."""
    rounds: dict[str, list[Round]] = {side: [] for side in urls}
    for repeat in range(args.repeats):
        order = list(urls) if repeat % 2 == 0 else list(urls)[::-1]
        ttfts = {side: measure(urls[side][0], clients, args) for side in order}
        for side in order:
            ttft, rate, failed_paced = ttfts[side]
            failed = 0
            if urls[side][1] != urls[side][0]:  # one upstream (`--one-upstream`): its window gave both figures
                _, rate, failed = measure(urls[side][1], clients, args)
            rounds[side].append(Round(ttft, rate, failed_paced + failed))
        print(f"  {clients} streams, round {repeat + 1}: " + ", ".join(
            f"{side} {r[-1].ttft:.1f} ms {r[-1].rate:.0f} tokens/s" for side, r in rounds.items()), flush=True)
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=counts, default=[1, 100])
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--verbosity", default="low", help="text.verbosity: how long each stream is")
    parser.add_argument("--window", type=float, default=3.0, help="seconds measured per window")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds over which a window's clients start")
    parser.add_argument("--repeats", type=int, default=5, help="rounds of windows (one per side) per figure")
    parser.add_argument("--workers", type=int, default=1, help="gunicorn workers of each server")
    parser.add_argument("--processes", type=int, default=1, help="client processes")
    parser.add_argument("--server-cpu", type=int, default=0, help="the upstreams' core (-1: any)")
    parser.add_argument("--client-cpu", type=int, default=1, help="the proxies' and the load's core (-1: any)")
    parser.add_argument("--one-upstream", action="store_true",
                        help="one paced upstream (and one proxy, one forwarder) for both figures: the tokens/s are "
                             "paced ones, not a speed-0 upstream's (the smoke run: half the servers to start)")
    smoke(parser, clients=[2], window=2.0, warmup=0.0, repeats=1, server_cpu=-1, client_cpu=-1,  # a TTFT in the window
          one_upstream=True)
    args = parse(parser)
    if args.smoke:
        load.START = 0.3  # one client process: it forks in far less
    upstream_cpu, client_cpu = core(args.server_cpu), core(args.client_cpu)
    load_on(client_cpu)  # the proxies and the load processes start from this one
    print(f"machine at the start: {machine()}")
    print(f"pinning: upstreams on core {upstream_cpu if upstream_cpu is not None else 'any'}, proxies and load "
          f"generator ({args.processes} process) on core {client_cpu if client_cpu is not None else 'any'}")
    workers = ("--workers", str(args.workers))
    rows = []
    upstreams = [ServerProcess("--speed", "1", "--seed", "1", *workers)]
    if not args.one_upstream:
        upstreams.append(ServerProcess("--speed", "0", *workers))
    proxies = [ServerProcess("--backend", "proxy", "--upstream", upstream.base_url, "--upstream-keyless", *workers)
               for upstream in upstreams]
    bares = [forwarder(upstream.base_url, args.workers) for upstream in upstreams]
    (paced, fast), (paced_proxy, fast_proxy), (paced_bare, fast_bare) = (
        (servers[0], servers[-1]) for servers in (upstreams, proxies, bares))
    with running(*upstreams, *proxies, *bares):
        for upstream in upstreams:
            assert upstream.process is not None
            pin(upstream.process.pid, upstream_cpu)
        urls = {"direct": (paced.base_url, fast.base_url),
                "bare forwarder": (paced_bare.base_url, fast_bare.base_url),
                "LLMSim proxy": (paced_proxy.base_url, fast_proxy.base_url)}
        for clients in args.clients:
            rounds = alternate(urls, clients, args)
            failed = sum(r.failed for side in rounds.values() for r in side)
            for via in ("bare forwarder", "LLMSim proxy"):
                pairs = list(zip(rounds["direct"], rounds[via], strict=False))
                added = statistics.median(through.ttft - direct.ttft for direct, through in pairs)
                losses = [1 - through.rate / direct.rate for direct, through in pairs if direct.rate]
                loss = statistics.median(losses)
                goals = via == "LLMSim proxy"
                rows.append([str(clients), via, f"{statistics.median(r.ttft for r in rounds['direct']):.1f}",
                             f"{statistics.median(r.ttft for r in rounds[via]):.1f}", f"{added:+.1f}",
                             ("yes" if added < GOAL_TTFT_MS else "NO") if goals else "",
                             f"{statistics.median(r.rate for r in rounds['direct']):.0f}",
                             f"{statistics.median(r.rate for r in rounds[via]):.0f}", f"{loss * 100:+.1f}%",
                             f"{min(losses) * 100:+.0f} to {max(losses) * 100:+.0f}%",
                             ("yes" if loss < GOAL_LOSS else "NO") if goals else "", str(failed) if goals else ""])
                print("  ", " ".join(rows[-1]), flush=True)
    print(f"{args.repeats} rounds of {args.window:g} s windows per figure, alternating; medians, and the median of "
          "each round's difference or ratio")
    print(table(["streams", "through", "TTFT p50 direct ms", "through ms", "added ms", f"< {GOAL_TTFT_MS:.0f} ms",
                 "tokens/s direct", "through", "lost", "lost per round", f"< {GOAL_LOSS:.0%}", "failed"], rows))
    if args.one_upstream:
        print("one upstream, paced, for both figures (--one-upstream): its tokens/s are a paced stream's")
    print("goals are LLMSim's; the bare forwarder (bench/bare_forwarder.py) is the floor of any HTTP hop here")
    print(f"machine at the end: {machine()}")


if __name__ == "__main__":
    main()
