"""The mlx backend's speed against mlx_lm itself, on one model and one prompt.

    python -m bench.mlx_bench                       # builds a random-weight 0.5B qwen2 (no download)
    python -m bench.mlx_bench --model PATH --http   # a local model; also through both HTTP servers

Prints, per way of generating: time to first token (TTFT) and decode tokens/s (tokens after the
first over the time after the first), the median of --runs runs after a warm-up, sampled at temperature 1:
- direct:   mlx_lm.stream_generate on the prompt's tokens (the reference);
- backend:  llmsim's MLXBackend.generate (chat template, parser, worker thread), cold KV cache;
- cached:   backend again, second turn of the conversation: KV-cache reuse vs a cold cache;
- with --http: llmsim's /v1/responses and /v1/chat/completions streams vs `mlx_lm server`'s
  /v1/chat/completions stream (SSE, httpx), same model, prompt and token count; then both servers
  under 1, 4, 8 and 16 concurrent streams (--concurrency): aggregate tokens/s and TTFT p50/p99.

Goals (issue 18): on the `tiny` model 8 concurrent streams give >= 2.5x the tokens/s of one; on `0.5b`,
llmsim at 8 concurrent streams gives >= 95 % of mlx_lm server's aggregate tokens/s.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

if __package__ in (None, ""):  # `python bench/mlx_bench.py`: the repository's root on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.common import core, counts, goal, load_on, parse, pin, quantile, smoke  # noqa: E402
from llmsim.backends.mlx.backend import LoadedModel, MLXBackend, load_model  # noqa: E402
from llmsim.backends.mlx.models import ModelSpec  # noqa: E402
from llmsim.generation import Finish, Prompt, Turn  # noqa: E402
from llmsim.testing import ServerProcess, free_port  # noqa: E402

Sample = tuple[float, float, int]  # (ttft seconds, decode seconds, tokens)
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while", "Paris", "sleeps", "under",
         "a", "warm", "summer", "rain", "and", "everyone", "asks", "what", "the", "weather", "will", "be", "like",
         "tomorrow"]


def user_text(words: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(words))


class NoTokens(Exception):
    """A stream that ended without one visible token."""


def timed(stream: Iterator[int]) -> Sample:
    """`stream` yields token counts as they arrive (first item = first token)."""
    start = time.perf_counter()
    first = last = None
    tokens = 0
    for count in stream:
        now = time.perf_counter()
        first = first if first is not None else now
        last = now
        tokens += count
    if first is None or last is None:
        raise NoTokens
    return first - start, last - first, tokens


def report(name: str, samples: list[Sample], reference: tuple[float, float] | None = None) -> tuple[float, float]:
    ttft = statistics.median(s[0] for s in samples)
    decoding = [(s[2] - 1) / s[1] for s in samples if s[1] > 0]  # a random-weight model may stop after one token
    tps = statistics.median(decoding) if decoding else math.nan
    tokens = samples[0][2]
    line = f"{name:<28} TTFT {ttft * 1000:8.1f} ms   decode {tps:8.1f} tok/s   ({tokens} tokens)"
    if reference:
        line += f"   = {tps / reference[1] * 100:5.1f} % of direct tok/s, TTFT x{ttft / reference[0]:.2f}"
    print(line, flush=True)
    return ttft, tps


def repeat(runs: int, once: Callable[[], Sample]) -> list[Sample]:
    once()  # warm-up: compiles kernels, fills allocator caches
    return [once() for _ in range(runs)]


def cold(loaded: LoadedModel) -> None:
    loaded.cache.tokens, loaded.cache.cache = [], None


def in_process(loaded: LoadedModel, args: argparse.Namespace) -> None:
    from mlx_lm import stream_generate
    from mlx_lm.sample_utils import make_sampler

    backend = MLXBackend([loaded])
    turns = [Turn("user", user_text(args.prompt_words))]
    # sampled at temperature 1 under a seed: a random-weight model then writes visible text, not only spaces
    prompt = Prompt(model=loaded.alias, profile=loaded.profile, turns=turns, input_tokens=0, temperature=1.0,
                    seed=0, max_output_tokens=args.tokens)
    tokens, _ = backend.render(loaded, prompt)
    print(f"prompt: {len(tokens)} tokens; generating {args.tokens} tokens, sampled (temperature 1)\n", flush=True)

    def direct() -> Sample:
        return timed(1 for _ in stream_generate(loaded.model, loaded.tokenizer, tokens, args.tokens,
                                                sampler=make_sampler(1.0)))

    def ours(p: Prompt, keep_cache: bool = False) -> Sample:
        if not keep_cache:
            cold(loaded)
        usage = None

        def deltas() -> Iterator[int]:
            nonlocal usage
            for delta in backend.generate(p):
                if isinstance(delta, Finish):
                    usage = delta.usage
                yield 0
        ttft, decode, _ = timed(deltas())
        assert usage is not None
        return ttft, decode, usage.output_tokens

    reference = report("direct stream_generate", repeat(args.runs, direct))
    report("llmsim MLXBackend", repeat(args.runs, lambda: ours(prompt)), reference)

    reply = "Sure. " + user_text(args.tokens // 2)
    follow = Prompt(model=loaded.alias, profile=loaded.profile, input_tokens=0, temperature=1.0, seed=0,
                    max_output_tokens=16, turns=turns + [Turn("assistant", reply), Turn("user", "And tomorrow?")])

    def second_turn(warm: bool) -> Sample:
        if warm:  # the cache as the first turn leaves it: its prompt and reply
            cold(loaded)
            first = Prompt(model=loaded.alias, profile=loaded.profile, input_tokens=0, temperature=1.0, seed=0,
                           max_output_tokens=16, turns=turns + [Turn("assistant", reply)])
            for _ in backend.generate(first):
                pass
        return ours(follow, keep_cache=warm)

    print(f"\nsecond turn ({len(backend.render(loaded, follow)[0])} prompt tokens), TTFT:", flush=True)
    cold_ttft = report("  cold KV cache", repeat(args.runs, lambda: second_turn(False)))[0]
    warm_ttft = report("  reused KV cache", repeat(args.runs, lambda: second_turn(True)))[0]
    print(f"  prompt-cache TTFT gain: x{cold_ttft / warm_ttft:.1f}", flush=True)


def sse(client: httpx.Client, url: str, body: dict, count: Callable[[dict], int], tries: int = 3) -> Sample:
    """One stream's sample. A random-weight model now and then writes `<think>` first and spends every token on
    reasoning, which Chat does not show (2 streams in 400 of 16 tokens), or ends after one token, which gives no
    decode rate: such a stream is sent again."""
    def events() -> Iterator[int]:
        with client.stream("POST", url, json=body, timeout=600) as response:
            if response.status_code != 200:
                raise RuntimeError(f"{url}: {response.status_code} {response.read().decode()}")
            for line in response.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    n = count(json.loads(line[6:]))
                    if n:
                        yield n
    for _ in range(tries - 1):
        try:
            sample = timed(events())
        except NoTokens:
            continue
        if sample[2] > 1:
            return sample
    return timed(events())


def responses_tokens(event: dict) -> int:
    return 1 if event.get("type") in ("response.output_text.delta", "response.reasoning_text.delta") else 0


def chat_tokens(chunk: dict) -> int:
    choices = chunk.get("choices") or [{}]
    delta = choices[0].get("delta") or {}
    return 1 if delta.get("content") or delta.get("reasoning") or delta.get("reasoning_content") else 0


def chat_stream(client: httpx.Client, url: str, body: dict) -> Sample:
    """One chat stream: TTFT to the first content, and the tokens the server's usage chunk counts."""
    start = time.perf_counter()
    first = last = None
    tokens = 0
    with client.stream("POST", url, json={**body, "stream": True, "stream_options": {"include_usage": True}},
                       timeout=600) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code} {response.read().decode()}")
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            now = time.perf_counter()
            if chat_tokens(chunk) and first is None:
                first = now
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            last = now
    assert last is not None, "no chunks"
    first = first if first is not None else last
    return first - start, last - first, tokens


def _call(once: Callable[[], Sample]) -> Sample:
    return once()


def alternating(n: int, windows: int, ours: Callable[[], Sample], theirs: Callable[[], Sample]
                ) -> tuple[list[float], list[float], list[float]]:
    """`n` streams at once against each server in turn, `windows` times (both warmed first): each window's aggregate
    tokens/s, ours and theirs, and the ratio of each pair of windows taken next to each other."""
    mine: list[float] = []
    other: list[float] = []
    with ThreadPoolExecutor(n) as pool:
        for once in (ours, theirs):
            list(pool.map(_call, [once] * n))  # warm-up
        for window in range(windows):
            for once, into in ((ours, mine), (theirs, other))[::1 if window % 2 == 0 else -1]:
                start = time.perf_counter()
                tokens = sum(sample[2] for sample in pool.map(_call, [once] * n))
                into.append(tokens / (time.perf_counter() - start))
    return mine, other, [a / b for a, b in zip(mine, other, strict=True)]


def concurrent(n: int, rounds: int, once: Callable[[], Sample]) -> tuple[float, float, float]:
    """`n` streams at once, `rounds` times: aggregate tokens/s over the wall time, TTFT p50 and p99 (ms)."""
    samples: list[Sample] = []
    wall = 0.0
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda _: once(), range(n)))  # warm-up
        for _ in range(rounds):
            start = time.perf_counter()
            samples += list(pool.map(lambda _: once(), range(n)))
            wall += time.perf_counter() - start
    ttfts = [s[0] * 1000 for s in samples]
    return sum(s[2] for s in samples) / wall, quantile(ttfts, 0.5), quantile(ttfts, 0.99)


class MLXServer:
    """`mlx_lm server` on a free port, for comparison."""

    def __init__(self, path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, "-m", "mlx_lm", "server", "--model", str(path), "--port",
                                         str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while True:
            try:
                httpx.get(f"{self.url}/v1/models", timeout=1)
                return
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError("mlx_lm server did not start") from None
                time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def over_http(path: Path, args: argparse.Namespace) -> None:
    runs = iter(range(1_000_000))

    def text() -> str:  # a new first word each run: neither server's prompt cache can help
        return f"Run {next(runs)}: {user_text(args.prompt_words)}"

    def chat(limit: str) -> dict:
        return {"messages": [{"role": "user", "content": text()}], limit: args.tokens, "temperature": 1.0,
                "stream": True}

    print("\nHTTP streams (SSE; tok/s counts content deltas; cold prompt cache):", flush=True)
    client = httpx.Client(limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))
    # LLMSim's server starts beside mlx_lm's: each start is seconds of imports and a model load
    ours = ServerProcess("--backend", "mlx", "--model", f"bench={path}", "--speed", "0", startup_timeout=300).launch()
    try:
        theirs = MLXServer(path)
        try:
            ours.wait_until_up()
            assert ours.process is not None
            for pid in (ours.process.pid, theirs.process.pid):
                pin(pid, core(args.server_cpu))
            report("llmsim /v1/responses", repeat(args.runs, lambda: sse(client, f"{ours.url}/v1/responses", {
                "model": "bench", "input": text(), "max_output_tokens": args.tokens, "temperature": 1.0,
                "stream": True, "store": False}, responses_tokens)))
            ours_chat = lambda: sse(client, f"{ours.url}/v1/chat/completions",  # noqa: E731
                                    {"model": "bench", **chat("max_completion_tokens")}, chat_tokens)
            theirs_chat = lambda: sse(client, f"{theirs.url}/v1/chat/completions",  # noqa: E731
                                      {"model": str(path), **chat("max_tokens")}, chat_tokens)
            report("llmsim /v1/chat/completions", repeat(args.runs, ours_chat))
            report("mlx_lm server chat", repeat(args.runs, theirs_chat))

            def sampled(url: str, model: str, limit: str) -> Callable[[], Sample]:
                # sampled, unseeded: both servers batch it, and a random model writes visible text
                return lambda: chat_stream(client, url, {"model": model, "messages": [
                    {"role": "user", "content": text()}], limit: args.tokens, "temperature": 1.0})

            ours_chat = sampled(f"{ours.url}/v1/chat/completions", "bench", "max_completion_tokens")
            theirs_chat = sampled(f"{theirs.url}/v1/chat/completions", str(path), "max_tokens")
            print(f"\nconcurrent chat streams ({args.tokens} tokens each, temperature 1): aggregate tok/s, "
                  "TTFT p50 / p99 (ms)", flush=True)
            print("| streams | llmsim tok/s | TTFT p50 | p99 | mlx_lm server tok/s | TTFT p50 | p99 | llmsim/mlx_lm |")
            print("|---|---|---|---|---|---|---|---|")
            figures = {}
            for n in args.concurrency:
                mine, other = concurrent(n, args.runs, ours_chat), concurrent(n, args.runs, theirs_chat)
                figures[n] = mine, other
                print(f"| {n} | {mine[0]:.1f} | {mine[1]:.0f} | {mine[2]:.0f} | {other[0]:.1f} | {other[1]:.0f} | "
                      f"{other[2]:.0f} | {mine[0] / other[0]:.2f}x |", flush=True)
            print(f"\nalternating windows, {args.windows} per server, both pinned to core {args.server_cpu} (the "
                  f"load on {args.client_cpu}): llmsim/mlx_lm server aggregate tok/s, median and spread of the "
                  "ratios of windows taken next to each other", flush=True)
            for n, target in ((1, 0.95), (8, 1.2)):
                mine_w, other_w, ratios = alternating(n, args.windows, ours_chat, theirs_chat)
                print(f"  {n} stream(s): llmsim {statistics.median(mine_w):.1f} tok/s, mlx_lm server "
                      f"{statistics.median(other_w):.1f}; ratios {' '.join(f'{r:.2f}' for r in ratios)} "
                      f"(spread {min(ratios):.2f}-{max(ratios):.2f})", flush=True)
                print(goal(f"llmsim/mlx_lm server at {n} stream(s)", statistics.median(ratios), target))
            if 1 in figures and 8 in figures:
                print(f"llmsim 8 streams / 1 stream: x{figures[8][0][0] / figures[1][0][0]:.2f} "
                      f"(goal on tiny: >= 2.5x); mlx_lm server: x{figures[8][1][0] / figures[1][1][0]:.2f}")
                print(f"llmsim / mlx_lm server at 8 streams: {figures[8][0][0] / figures[8][1][0] * 100:.0f} % "
                      f"(goal on 0.5b: >= 95 %)")
        finally:
            theirs.stop()
    finally:
        ours.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a local model directory (default: build a random one)")
    parser.add_argument("--size", default="0.5b", choices=["tiny", "small", "0.5b"], help="the random model's shape")
    parser.add_argument("--tokens", type=int, default=256, help="tokens to generate")
    parser.add_argument("--prompt-words", type=int, default=300, help="words in the user message")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--http", action="store_true", help="also compare the HTTP servers")
    parser.add_argument("--concurrency", type=counts, default=[1, 4, 8, 16],
                        help="concurrent streams to compare over HTTP, comma-separated")
    parser.add_argument("--windows", type=int, default=5, help="alternating windows per server for the goals")
    parser.add_argument("--server-cpu", type=int, default=0, help="the core both servers run on (-1: any)")
    parser.add_argument("--client-cpu", type=int, default=1, help="the core the load runs on (-1: any)")
    smoke(parser, size="tiny", tokens=16, prompt_words=20, runs=1, http=True, concurrency=[2], windows=1,
          server_cpu=-1, client_cpu=-1)
    args = parse(parser)
    load_on(core(args.client_cpu))

    import mlx.core as mx

    print(f"mlx {getattr(mx, '__version__', '?')} on {mx.default_device()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.model
        if path is None:
            from llmsim.backends.mlx.fixture import build_random_model

            path = build_random_model(Path(tmp) / f"qwen2-{args.size}-random", args.size)
            print(f"built a random-weight qwen2 ({args.size}) in {path}", flush=True)
        in_process(load_model(ModelSpec("bench", str(path))), args)
        if args.http:
            over_http(path, args)


if __name__ == "__main__":
    main()
