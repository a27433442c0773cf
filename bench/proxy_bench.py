"""`python bench/proxy_bench.py`: what `--backend proxy` adds, direct to an upstream LLMSim against through a
proxy in front of it, at 1 and 100 concurrent streams.

- TTFT: the upstream paced at speed 1 and seeded, every request the same, so each has the same TTFT
  upstream; the p50 through the proxy minus the p50 direct is the proxy's cost. Goal: under 2 ms.
- Throughput: the upstream at speed 0, streamed tokens per second (closed-loop clients) through the proxy
  against direct. Goal: under 5 % lost.

Direct and proxied runs alternate in one process, against the same upstream. On a machine with fewer cores
than the processes involved (upstream, proxy, clients) the proxy's CPU competes with the upstream's, so the
throughput figure says more about the machine than about the proxy: run it on a quiet one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from load import Plan, run  # noqa: E402
from run import quantile, table  # noqa: E402

from llmsim.testing import ServerProcess  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=lambda v: [int(x) for x in v.split(",")], default=[1, 100])
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--verbosity", default="low", help="text.verbosity: how long each stream is")
    parser.add_argument("--window", type=float, default=10.0, help="seconds measured per row")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds over which the clients start")
    parser.add_argument("--workers", type=int, default=1, help="gunicorn workers of each server")
    parser.add_argument("--processes", type=int, default=2, help="client processes")
    args = parser.parse_args()
    workers = ("--workers", str(args.workers))
    rows = []
    with ServerProcess("--speed", "1", "--seed", "1", *workers) as paced, \
            ServerProcess("--speed", "0", *workers) as fast, \
            ServerProcess("--backend", "proxy", "--upstream", paced.base_url, *workers) as paced_proxy, \
            ServerProcess("--backend", "proxy", "--upstream", fast.base_url, *workers) as fast_proxy:
        for clients in args.clients:
            ttft_direct, _, failed_a = measure(paced.base_url, clients, args)
            ttft_proxy, _, failed_b = measure(paced_proxy.base_url, clients, args)
            _, rate_direct, failed_c = measure(fast.base_url, clients, args)
            _, rate_proxy, failed_d = measure(fast_proxy.base_url, clients, args)
            added, loss = ttft_proxy - ttft_direct, 1 - rate_proxy / rate_direct
            rows.append([str(clients), f"{ttft_direct:.1f}", f"{ttft_proxy:.1f}", f"{added:+.1f}",
                         "yes" if added < GOAL_TTFT_MS else "NO", f"{rate_direct:.0f}", f"{rate_proxy:.0f}",
                         f"{loss * 100:+.1f}%", "yes" if loss < GOAL_LOSS else "NO",
                         str(failed_a + failed_b + failed_c + failed_d)])
            print("  ", " ".join(rows[-1]), flush=True)
    print(table(["streams", "TTFT p50 direct ms", "via proxy ms", "added ms", f"< {GOAL_TTFT_MS:.0f} ms",
                 "tokens/s direct", "via proxy", "lost", f"< {GOAL_LOSS:.0%}", "failed"], rows))


if __name__ == "__main__":
    main()
