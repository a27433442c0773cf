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
    python = {"langchain-openai": "test_langchain_openai", "pydantic-ai": "test_pydantic_ai",
              "openai-agents": "test_openai_agents", "litellm": "test_litellm", "Codex CLI": "test_codex"}
    assert set(python) | set(test_node.SCRIPTS) == set(matrix.CLIENTS)
    for client, module in python.items():
        names = [name for name in vars(__import__(module)) if name.startswith("test_")]
        assert {matrix.feature_of(name) for name in names} == set(matrix.FEATURES), client
    for script in test_node.SCRIPTS.values():
        assert {matrix.feature_of(f"test_{check}") for check in test_node.checks(script)} == set(matrix.FEATURES)
