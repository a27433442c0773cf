"""Third-party clients against a real LLMSim (the pytest plugin's `llmsim` fixture: speed 0, seed 0, a clean
server state per test). Each test fills one cell of the client × feature matrix (matrix.py); with
LLMSIM_CLIENTS_MATRIX=FILE the outcomes are written there for the README table."""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

import matrix

_outcomes: dict[str, dict[str, dict[str, str]]] = {}


def cell_of(item: pytest.Item) -> tuple[str, str] | None:
    """(client, feature): parameters `client` and `feature` (a check's name), else the module's CLIENT and
    the test's name."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "client" in params:
        return str(params["client"]), matrix.feature_of(f"test_{params['feature']}")
    client = getattr(item.module, "CLIENT", None)
    return None if client is None else (client, matrix.feature_of(item.name))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """The report carries its cell: under pytest-xdist it is counted in the controller, which has no items."""
    report = yield
    cell_key = cell_of(item)
    if cell_key is not None:
        report.llmsim_cell = (*cell_key, item.name)
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    cell_key = getattr(report, "llmsim_cell", None)
    if cell_key is not None and (report.when == "call" or report.failed):
        client, feature, name = cell_key
        cell = _outcomes.setdefault(client, {}).setdefault(feature, {})
        if cell.get(name) != "failed":
            cell[name] = "passed" if report.passed else "failed"


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("LLMSIM_CLIENTS_MATRIX")
    if target and _outcomes and not hasattr(session.config, "workerinput"):  # not in an xdist worker
        matrix.write(_outcomes, Path(target))
