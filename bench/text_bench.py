"""`python -m bench.text_bench`: what the simulator's text costs, by text mode, in one process.

Each mode generates the same prompts through `SimBackend.generate` (planning, text, token accounting, every
delta drained), so the figures are the backend's whole cost per answer. `faker` is LLMSim's text source before
prose existed (Faker sentences, tokenized per sentence and again whole), so the prose/faker ratio is the
before/after comparison; the goal is that prose costs no more (ratio <= 1.0).

The second table is the formats agent frameworks ask for in words (llmsim/backends/sim/formats/): each
recogniser's prompt, the cost of recognition and generation per request (`formats.respond`, the recognisers
tried in order until one claims it), against the CPU of a whole speed-0 `json_object` request through the
app (parse, validate, translate, generate, serialize; Flask's test client, so no socket): goal <= 10 %.
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
from llmsim.app import create_app  # noqa: E402
from llmsim.backends.sim import formats  # noqa: E402
from llmsim.backends.sim.backend import SimBackend  # noqa: E402
from llmsim.config import DEFAULT_PROFILES_DIR, Settings  # noqa: E402
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
_DSPY = ("Your input fields are:\n1. `question` (str):\nYour output fields are:\n1. `reasoning` (str):\n"
         "2. `answer` (int):\nAll interactions will be structured in the following way, with the appropriate values "
         "filled in.\n\n[[ ## question ## ]]\n{question}\n\n[[ ## reasoning ## ]]\n{reasoning}\n\n[[ ## answer ## ]]\n"
         "{answer}        # note: the value you produce must be a single int value\n\n[[ ## completed ## ]]\n")
_REACT = ("Answer the following questions as best you can. You have access to the following tools:\n\n"
          "get_weather(city: str) -> str - Get the current weather in a city.\n\nUse the following format:\n\n"
          "Question: the input question you must answer\nThought: you should always think about what to do\n"
          "Action: the action to take, should be one of [get_weather]\nAction Input: the input to the action\n"
          "Observation: the result of the action\nThought: I now know the final answer\nFinal Answer: the final "
          "answer\n\nBegin!\n\nQuestion: What is the weather in Paris?\nThought:")
_CODE = ("The code sequence must be opened with '<code>', and closed with '</code>'. Return a final answer using "
         "the `final_answer` tool. You only have access to these tools, behaving like regular python functions:\n"
         "<code>\ndef get_weather(city: string) -> string:\n"
         "    \"\"\"Get the current weather in a city.\"\"\"\n</code>")
FORMAT_PROMPTS = (  # (name, system, user, text format)
    ("dspy ChatAdapter", _DSPY, "[[ ## question ## ]]\nWhat is 17 + 25?", "text"),
    ("dspy JSONAdapter", _DSPY.replace("All interactions", "Outputs will be a JSON object with the following fields."
                                       "\nAll interactions"), "[[ ## question ## ]]\nWhy do volcanoes erupt?", "text"),
    ("code agent", _CODE, "New task:\nWhat is the weather in Paris?", "text"),
    ("ReAct text", "", _REACT, "text"),
    ("XML tags", "Put your answer in <answer></answer> tags.", "Why do volcanoes erupt?", "text"),
    ("JSON in words", "", "Respond with a JSON object with the keys 'title' and 'year', where year is an integer.",
     "text"),
    ("none claimed", "You are a helpful assistant.", "Why do volcanoes erupt near tectonic plate boundaries?", "text"),
)
JSON_BODY = {"model": "gpt-4o", "input": "Give me a JSON object with the keys 'title' and 'year'.",
             "text": {"format": {"type": "json_object"}}}


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


def recognisers(rounds: int, seeds: int) -> list[tuple[str, float]]:
    """Microseconds per request of recognition and generation, by recogniser prompt (best of `rounds`)."""
    import random

    from faker import Faker
    profile = load_catalog([DEFAULT_PROFILES_DIR]).resolve("gpt-4o")
    fake = Faker()
    out = []
    for name, system, user, kind in FORMAT_PROMPTS:
        turns = ([Turn("system", system)] if system else []) + [Turn("user", user)]
        prompt = Prompt(model="gpt-4o", profile=profile, turns=turns, input_tokens=10, text_format={"type": kind})
        timings = []
        for _ in range(rounds):
            start = time.perf_counter()
            for seed in range(seeds):
                formats.respond(prompt, random.Random(seed), fake)
            timings.append((time.perf_counter() - start) / seeds * 1e6)
        out.append((name, min(timings)))  # the best round: the least disturbed by other load on the machine
    return out


def json_request(rounds: int, count: int) -> float:
    """CPU microseconds of one whole speed-0 json_object request through the app (best of `rounds`)."""
    client = create_app(Settings(speed=0.0, seed=7)).test_client()
    client.post("/v1/responses", json=JSON_BODY).get_data()  # warm: imports, caches
    timings = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(count):
            assert client.post("/v1/responses", json=JSON_BODY).status_code == 200
        timings.append((time.process_time() - start) / count * 1e6)
    return min(timings)


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
    print()
    recognisers(1, 2)  # warm
    costs = recognisers(args.rounds, args.seeds)
    request = json_request(args.rounds, args.seeds * 2)
    print(f"formats asked in words: recognition + generation per request, vs a whole speed-0 json_object request "
          f"({request:.0f} µs CPU)")
    print("| prompt | µs per request | share of a JSON request |")
    print("|---|---|---|")
    for name, micros in costs:
        print(f"| {name} | {micros:.0f} | {micros / request:.1%} |")
    worst = max(micros for _, micros in costs) / request
    print(f"goal: at most 10 % of a JSON request's CPU: worst {worst:.1%} {'MET' if worst <= 0.10 else 'NOT MET'}")


if __name__ == "__main__":
    main()
