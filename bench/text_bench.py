"""`python -m bench.text_bench`: what the simulator's text costs, by text mode, in one process.

Each mode generates the same prompts through `SimBackend.generate` (planning, text, token accounting, every
delta drained), so the figures are the backend's whole cost per answer. `faker` is LLMSim's text source before
prose existed (Faker sentences, tokenized per sentence and again whole), so the prose/faker ratio is the
before/after comparison; the goal is that prose costs no more (ratio <= 1.0).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # `python bench/text_bench.py`: the repository's root on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.common import parse, smoke  # noqa: E402
from llmsim.backends.sim.backend import SimBackend  # noqa: E402
from llmsim.config import DEFAULT_PROFILES_DIR  # noqa: E402
from llmsim.generation import Prompt, TextDelta, TextRun, Turn  # noqa: E402
from llmsim.timing.profiles import load_catalog  # noqa: E402

QUESTIONS = (
    "Tell me about tea",
    "What is Kubernetes and why do teams use it?",
    "Write a Python function that reverses a string",
    "How do I set up Redis replication?",
    "List some tips for writing clean React components",
    "Compare PostgreSQL and MongoDB for an analytics workload",
)
MODES = ("faker", "prose", "lorem", "echo")


def measure(mode: str, verbosity: str, rounds: int, seeds: int = 20) -> tuple[float, float]:
    """Median microseconds per answer over `rounds` passes of every question, and mean output tokens."""
    backend = SimBackend(text_mode=mode)
    profile = load_catalog([DEFAULT_PROFILES_DIR]).resolve("gpt-4o")
    prompts = [Prompt(model="gpt-4o", profile=profile, turns=[Turn("user", q)], input_tokens=10, verbosity=verbosity,
                      seed=seed) for seed in range(seeds) for q in QUESTIONS]
    timings, produced = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for prompt in prompts:
            produced.append(sum(d.tokens for d in backend.generate(prompt) if isinstance(d, (TextDelta, TextRun))))
        timings.append((time.perf_counter() - start) / len(prompts) * 1e6)
    return statistics.median(timings), statistics.fmean(produced)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--verbosity", default="medium", choices=("low", "medium", "high"))
    parser.add_argument("--seeds", type=int, default=20, help="answers per question and round")
    smoke(parser, rounds=1, seeds=2)
    args = parse(parser)
    measure("prose", args.verbosity, 1, args.seeds)  # warm the token caches, as a running server has them
    measure("faker", args.verbosity, 1, args.seeds)
    results = {mode: measure(mode, args.verbosity, args.rounds, args.seeds) for mode in MODES}
    base = results["faker"][0]
    print(f"sim text cost per answer, verbosity {args.verbosity}, {args.rounds} rounds of "
          f"{args.seeds * len(QUESTIONS)} answers (median)")
    print("| mode | µs per answer | tokens per answer | µs per token | vs faker (before) |")
    print("|---|---|---|---|---|")
    for mode, (micros, produced) in results.items():
        print(f"| {mode} | {micros:.0f} | {produced:.0f} | {micros / produced:.2f} | {micros / base:.2f}x |")
    ratio = results["prose"][0] / base
    print(f"goal: prose costs no more than faker (<= 1.00x): {ratio:.2f}x {'MET' if ratio <= 1.0 else 'NOT MET'}")


if __name__ == "__main__":
    main()
