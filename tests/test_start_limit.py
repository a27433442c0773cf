"""A test server's start limit grows with the machine's load or is set (LLMSIM_STARTUP_TIMEOUT), and a start
that fails says why with the server's log (a loaded CI runner once failed 125 tests on a fixed 30 s)."""

from __future__ import annotations

import os
import sys

import pytest

from llmsim.testing import ServerProcess, startup_limit


def test_the_limit_scales_with_the_load_per_core_and_the_variable_sets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMSIM_STARTUP_TIMEOUT", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 0.0, 0.0))
    assert startup_limit(30) == 30  # under a load of one per core: the limit as given
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 0.0, 0.0))
    assert startup_limit(30) == 135  # 4.5 per core
    monkeypatch.setenv("LLMSIM_STARTUP_TIMEOUT", "200")
    assert startup_limit(30) == 200
    monkeypatch.setenv("LLMSIM_STARTUP_TIMEOUT", "soon")
    with pytest.raises(RuntimeError, match="LLMSIM_STARTUP_TIMEOUT='soon': expected seconds"):
        startup_limit(30)


class Silent(ServerProcess):
    """A "server" that prints a line and never answers."""

    name = "silent"

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import time; print('loading the profiles...', flush=True); time.sleep(60)"]


def test_a_start_past_the_limit_fails_with_the_servers_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMSIM_STARTUP_TIMEOUT", "1.5")
    server = Silent()
    with pytest.raises(RuntimeError) as failed:
        server.start()
    message = str(failed.value)
    assert message.startswith("silent did not start within 1.5 s")
    assert "LLMSIM_STARTUP_TIMEOUT sets it" in message and "loading the profiles..." in message
    assert server.process is not None and server.process.poll() is not None  # stopped
