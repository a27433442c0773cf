"""The README's client table is the one matrix.py renders from the recorded results, and every client and
feature of the matrix has a test."""

from __future__ import annotations

import json

import matrix
import test_node


def test_readme_table_is_rendered_from_the_results() -> None:
    data = json.loads(matrix.RESULTS.read_text())
    readme = matrix.README.read_text()
    assert f"{matrix.BEGIN}\n{matrix.table(data)}\n{matrix.END}" in readme


def test_every_cell_has_a_test() -> None:
    """Every feature a client has an API for has a test, except where PARTIAL says which cells are still "–"."""
    python = {"openai (Python)": "test_openai_python", "langchain-openai": "test_langchain_openai",
              "pydantic-ai": "test_pydantic_ai", "openai-agents": "test_openai_agents", "litellm": "test_litellm",
              "Codex CLI": "test_codex", "instructor": "test_instructor", "llama-index": "test_llama_index",
              "inspect-ai": "test_inspect_ai", "dspy": "test_dspy", "smolagents": "test_smolagents",
              "haystack": "test_haystack"}
    partial = {"instructor": {"structured", "streaming"},  # tests that predate the matrix: their other cells "–"
               "smolagents": {"text", "streaming", "client_history", "tools", "structured", "retry"}}
    assert set(python) | set(test_node.SCRIPTS) == set(matrix.CLIENTS)
    covered = {client: {matrix.feature_of(name) for name in vars(__import__(module)) if name.startswith("test_")}
               for client, module in python.items()}
    covered |= {client: {matrix.feature_of(f"test_{check}") for check in test_node.checks(script)}
                for client, script in test_node.SCRIPTS.items()}
    for client, features in covered.items():
        applicable = set(matrix.FEATURES) - matrix.NOT_APPLICABLE.get(client, set())
        assert features == partial.get(client, applicable), client
    assert all(client == __import__(module).CLIENT for client, module in python.items())
