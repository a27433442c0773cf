"""Fault rules: exact schedules, reproducible probabilities, scopes, config from file, flags, env and admin API."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from llmsim.chaos.faults import Injector, StreamFault
from llmsim.chaos.rules import FaultConfig, FaultConfigError, RequestInfo, Rule, load_config, parse_forced, parse_rule
from llmsim.responses.events import EventBuilder
from llmsim.testing import ServerProcess

GPT4O = RequestInfo("responses", ("gpt-4o",))


def fired(injector: Injector, n: int, request: RequestInfo = GPT4O) -> list[int]:
    """The 1-based indexes of the requests (out of n) that a rule fired for."""
    return [i for i in range(1, n + 1) if injector.choose(request) is not None]


def test_schedules_are_exact() -> None:
    assert fired(Injector(FaultConfig(faults=[Rule(kind="server_error", first=2)])), 6) == [1, 2]
    assert fired(Injector(FaultConfig(faults=[Rule(kind="server_error", every=3)])), 10) == [3, 6, 9]
    assert fired(Injector(FaultConfig(faults=[Rule(kind="server_error", requests=[2, 5, 7])])), 8) == [2, 5, 7]
    assert fired(Injector(FaultConfig(faults=[Rule(kind="server_error", first=1, every=4)])), 9) == [1, 4, 8]
    assert fired(Injector(FaultConfig(faults=[Rule(kind="server_error")])), 3) == [1, 2, 3]


def test_reset_starts_schedules_again() -> None:
    injector = Injector(FaultConfig(faults=[Rule(kind="server_error", first=2)]))
    assert fired(injector, 3) == [1, 2]
    injector.count("server_error")
    injector.reset()
    assert fired(injector, 3) == [1, 2] and not injector.counters


def test_seeded_probability_is_reproducible_and_near_its_rate() -> None:
    config = FaultConfig(seed=42, faults=[Rule(kind="rate_limit", probability=0.3)])
    first = fired(Injector(config), 1000)
    assert first == fired(Injector(config), 1000)
    assert 240 <= len(first) <= 360  # 0.3 of 1000, well inside six standard deviations
    assert first != fired(Injector(config.model_copy(update={"seed": 43})), 1000)
    injector = Injector(config)
    assert fired(injector, 1000) == first
    injector.reset()
    assert fired(injector, 1000) == first


def test_each_rule_keeps_its_own_schedule_and_the_first_that_fires_wins() -> None:
    injector = Injector(FaultConfig(faults=[Rule(kind="server_error", every=2), Rule(kind="overloaded", first=3)]))
    kinds = [rule.kind if rule else None for rule in (injector.choose(GPT4O) for _ in range(5))]
    assert kinds == ["overloaded", "server_error", "overloaded", "server_error", None]


def test_scope_by_model_endpoint_api_key_and_metadata() -> None:
    rule = Rule(kind="server_error", models=["gpt-4o"], endpoints=["responses"], api_keys=["sk-a"],
                metadata={"team": "blue"})
    assert rule.in_scope(RequestInfo("responses", ("gpt-4o-2024-08-06", "gpt-4o"), "sk-a", {"team": "blue", "x": "1"}))
    assert not rule.in_scope(RequestInfo("responses", ("gpt-4.1",), "sk-a", {"team": "blue"}))
    assert not rule.in_scope(RequestInfo("chat.completions", ("gpt-4o",), "sk-a", {"team": "blue"}))
    assert not rule.in_scope(RequestInfo("responses", ("gpt-4o",), "sk-b", {"team": "blue"}))
    assert not rule.in_scope(RequestInfo("responses", ("gpt-4o",), "sk-a", {"team": "red"}))
    injector = Injector(FaultConfig(faults=[Rule(kind="server_error", first=1, models=["gpt-4o"])]))
    assert injector.choose(RequestInfo("responses", ("gpt-5",))) is None  # out of scope: not counted
    assert injector.choose(GPT4O) is not None


def test_rule_specs_and_their_errors() -> None:
    rule = parse_rule("429;first=2;retry_after=0.5;models=gpt-4o,gpt-5;metadata=team:blue")
    assert (rule.kind, rule.first, rule.retry_after, rule.models, rule.metadata) == \
        ("rate_limit", 2, 0.5, ["gpt-4o", "gpt-5"], {"team": "blue"})
    for bad in ("teapot", "500;first", "500;after_events=2", "latency_spike", "500;probability=2"):
        with pytest.raises(FaultConfigError):
            parse_rule(bad)


def test_config_file_errors_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text("faults:\n  - kind: rate_limit\n    every: 0\n")
    with pytest.raises(FaultConfigError, match=r"faults\.yaml: faults\.0\.every"):
        load_config(path)
    path.write_text("faults: [oops")
    with pytest.raises(FaultConfigError, match="not valid YAML"):
        load_config(path)
    result = subprocess.run([sys.executable, "-m", "llmsim", "serve", "--faults", str(path)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 2 and "faults.yaml" in result.stderr


def outcomes(client: openai.OpenAI, n: int, **fields: Any) -> list[int]:
    statuses = []
    for _ in range(n):
        try:
            client.responses.create(model=fields.get("model", "gpt-4o"), input="hi",
                                    metadata=fields.get("metadata"))
            statuses.append(200)
        except openai.APIStatusError as exc:
            statuses.append(exc.status_code)
    return statuses


def test_fault_file_and_flags_on_a_real_server(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI], tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    path.write_text(json.dumps({"faults": [{"kind": "503", "every": 2, "models": ["gpt-4o"]}]}))
    server = start_server("--faults", str(path), "--fault", "500;requests=1;models=gpt-4.1",
                          env={"LLMSIM_FAULT": "403;first=1;metadata=team:red"})
    client = sdk_client(server)
    assert outcomes(client, 4) == [200, 503, 200, 503]
    assert outcomes(client, 2, model="gpt-4.1") == [500, 200]
    assert outcomes(client, 2, metadata={"team": "red"}) == [403, 503]  # gpt-4o requests 5 and 6 for the 503 rule
    admin = f"{server.url}/llmsim/admin"
    assert httpx.get(f"{admin}/faults/counters").json()["faults"] == {"overloaded": 3, "server_error": 1,
                                                                     "forbidden": 1}
    rules = httpx.get(f"{admin}/faults").json()["faults"]
    assert [r["kind"] for r in rules] == ["overloaded", "server_error", "forbidden"]


def test_seeded_probability_over_the_wire_matches_in_process(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI]) -> None:
    server = start_server("--seed", "3", "--fault", "500;probability=0.5")
    client = sdk_client(server)
    expected = [500 if i in fired(Injector(FaultConfig(faults=[parse_rule("500;probability=0.5")]), seed=3), 12)
                else 200 for i in range(1, 13)]
    assert outcomes(client, 12) == expected
    httpx.post(f"{server.url}/llmsim/admin/faults/reset").raise_for_status()
    assert outcomes(client, 12) == expected


def test_admin_api_is_guarded_by_the_admin_key_and_health_is_open(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI]) -> None:
    server = start_server("--admin-key", "adm", "--api-key", "sk-user")
    admin = f"{server.url}/llmsim/admin"
    assert httpx.get(f"{server.url}/llmsim/health").json() == {"status": "ok"}
    denied = httpx.get(f"{admin}/faults", headers={"Authorization": "Bearer sk-user"})
    assert denied.status_code == 401 and denied.json()["error"]["code"] == "invalid_api_key"
    auth = {"Authorization": "Bearer adm"}
    bad = httpx.put(f"{admin}/faults", headers=auth, json={"faults": [{"kind": "teapot"}]})
    assert bad.status_code == 400 and set(bad.json()["error"]) == {"message", "type", "param", "code"}
    config = {"seed": 1, "faults": [{"kind": "server_error", "first": 1, "api_keys": ["sk-user"]}]}
    assert httpx.put(f"{admin}/faults", headers=auth, json=config).json()["faults"][0]["first"] == 1

    client = sdk_client(server, "sk-user")
    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="gpt-4o", input="hi")
    assert client.responses.create(model="gpt-4o", input="hi").status == "completed"
    requests = httpx.get(f"{admin}/requests", headers=auth).json()["data"]
    assert [(r["index"], r["fault"], r["status"]) for r in requests] == [(1, "server_error", 500), (2, None, 200)]
    assert requests[0]["api_key"] != "sk-user"  # shown masked
    assert httpx.post(f"{admin}/faults/reset", headers=auth).json() == {"reset": True}
    assert httpx.get(f"{admin}/faults/counters", headers=auth).json() == {"faults": {}, "rate_limited": 0,
                                                                        "requests": 0}
    assert httpx.get(f"{admin}/requests", headers=auth).json()["data"] == []


def test_a_stream_fault_still_ends_a_stream_shorter_than_its_trigger() -> None:
    chunks = iter([("chunk", "{}"), ("chunk", "{}")])  # no terminal event, as Chat Completions streams
    fault = StreamFault(parse_forced("stream_error;after_events=50"), stream=True)
    out = list(fault.events(EventBuilder({}), chunks))
    assert [kind for kind, _ in out] == ["chunk", "chunk", "error"]
    assert json.loads(out[-1][1])["code"] == "server_error"
