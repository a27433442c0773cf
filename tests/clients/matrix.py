"""The client × feature matrix: which cell a test fills, the results file the suite writes, and the README
table rendered from it (`python tests/clients/matrix.py` after a run with LLMSIM_CLIENTS_MATRIX set)."""

from __future__ import annotations

import json
import os
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
NODE_DIR = Path(os.environ.get("LLMSIM_CLIENTS_NODE_DIR") or HERE / "node")  # newest.py runs a copy
RESULTS = HERE / "results.json"
README = HERE.parent.parent / "README.md"

# (client, language, the packages whose versions the table names)
CLIENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Codex CLI": ("node", ("@openai/codex",)),
    "openai (Node)": ("node", ("openai",)),
    "Vercel AI SDK": ("node", ("ai", "@ai-sdk/openai")),
    "LangChain JS": ("node", ("langchain", "@langchain/openai")),
    "OpenAI Agents JS": ("node", ("@openai/agents",)),
    "Mastra": ("node", ("@mastra/core",)),
    "openai (Python)": ("python", ("openai",)),
    "langchain-openai": ("python", ("langchain-openai",)),
    "pydantic-ai": ("python", ("pydantic-ai-slim",)),
    "openai-agents": ("python", ("openai-agents",)),
    "litellm": ("python", ("litellm",)),
    "instructor": ("python", ("instructor",)),
    "llama-index": ("python", ("llama-index-core", "llama-index-llms-openai")),
    "inspect-ai": ("python", ("inspect-ai",)),
    "dspy": ("python", ("dspy",)),
    "smolagents": ("python", ("smolagents",)),
    "haystack": ("python", ("haystack-ai",)),
}
# Python clients tested outside the table (the Gemini API's, the embeddings'): newest.py upgrades them too.
UNLISTED = ("google-genai", "langchain-google-genai", "llama-index-embeddings-openai")
# Python packages whose pins sit below openai 3: installed apart, with --no-deps (.ci/run, newest.py).
APART = ("instructor", "llama-index-llms-openai", "google-adk")  # google-adk: google-genai<3
# Features a client has no API for ("n/a" in the table; "–" is a feature it has that no test covers yet).
NOT_APPLICABLE: dict[str, set[str]] = {
    "inspect-ai": {"server_state"},  # its ModelOutput carries no response id to continue from
    "instructor": {"server_state", "tools"},  # it extracts through tools; a tool round trip is not its job
    "dspy": {"server_state"},  # a program's LM call is stateless: no previous_response_id
    "smolagents": {"server_state"},  # its agents replay their memory; no previous_response_id
}
FEATURES = {
    "text": "text",
    "streaming": "streaming",
    "server_state": "multi-turn, server state",
    "client_history": "multi-turn, client history",
    "tools": "tool round trip",
    "structured": "structured output",
    "reasoning": "reasoning model",
    "retry": "429 retried",
}
BEGIN, END = "<!-- client-matrix:begin -->", "<!-- client-matrix:end -->"


def feature_of(test_name: str) -> str:
    """`test_tools__chat[...]` → `tools`: a feature's variants share its cell."""
    name = test_name.split("[")[0].removeprefix("test_").split("__")[0]
    if name not in FEATURES:
        raise ValueError(f"{test_name}: not a feature of the matrix ({', '.join(FEATURES)})")
    return name


def versions() -> dict[str, dict[str, str]]:
    """language → package → version (`openai` is both an npm and a PyPI package)."""
    found: dict[str, dict[str, str]] = {"node": {}, "python": {}}
    for language, packages in CLIENTS.values():
        for package in packages:
            manifest = NODE_DIR / "node_modules" / package / "package.json"
            if language == "node":
                found[language][package] = (json.loads(manifest.read_text())["version"] if manifest.exists()
                                            else "not installed")
                continue
            try:
                found[language][package] = metadata.version(package)
            except metadata.PackageNotFoundError:
                found[language][package] = "not installed"
    return found


def write(outcomes: dict[str, dict[str, dict[str, str]]], path: Path) -> None:
    """outcomes: client → feature → test name → "passed" / "failed"."""
    path.write_text(json.dumps({"versions": versions(), "results": outcomes}, indent=1, sort_keys=True) + "\n")


def table(data: dict[str, Any]) -> str:
    head = "| client (tested version) | " + " | ".join(FEATURES.values()) + " |"
    rows = [head, "|" + "---|" * (len(FEATURES) + 1)]
    for client, (language, packages) in CLIENTS.items():
        tested = ", ".join(f"`{p}` {data['versions'][language].get(p, 'not installed')}" for p in packages)
        cells = []
        for feature in FEATURES:
            tests = data["results"].get(client, {}).get(feature, {})
            passed = sum(outcome == "passed" for outcome in tests.values())
            if feature in NOT_APPLICABLE.get(client, ()):
                cells.append("n/a")
                continue
            cells.append("–" if not tests else "yes" if passed == len(tests) else f"**no** ({passed}/{len(tests)})")
        rows.append(f"| {client} ({tested}) | " + " | ".join(cells) + " |")
    failing = [f"{client}: `{name}`" for client, features in sorted(data["results"].items())
               for tests in features.values() for name, outcome in sorted(tests.items()) if outcome != "passed"]
    if failing:
        rows += ["", "Not passing: " + "; ".join(failing) + "."]
    return "\n".join(rows)


def render(results: Path = RESULTS, readme: Path = README) -> None:
    text = readme.read_text()
    block = f"{BEGIN}\n{table(json.loads(results.read_text()))}\n{END}"
    updated, count = re.subn(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    if count != 1:
        raise SystemExit(f"{readme}: expected one {BEGIN} … {END} block")
    readme.write_text(updated)


if __name__ == "__main__":
    render(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(os.environ.get("LLMSIM_CLIENTS_MATRIX", RESULTS)))
