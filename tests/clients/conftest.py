"""Third-party clients against a real LLMSim (the pytest plugin's `llmsim` fixture: speed 0, seed 0, a clean
server state per test). Each test fills one cell of the client × feature matrix (matrix.py); with
LLMSIM_CLIENTS_MATRIX=FILE the outcomes are written there for the README table."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


import matrix

_outcomes: dict[str, dict[str, dict[str, str]]] = {}


def client_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "client" in callspec.params:
        return str(callspec.params["client"])
    return getattr(item.module, "CLIENT", None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    client = client_of(item)
    if client is not None and (report.when == "call" or report.failed):
        cell = _outcomes.setdefault(client, {}).setdefault(matrix.feature_of(item.name), {})
        if cell.get(item.name) != "failed":
            cell[item.name] = "passed" if report.passed else "failed"
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("LLMSIM_CLIENTS_MATRIX")
    if target and _outcomes:
        matrix.write(_outcomes, Path(target))
