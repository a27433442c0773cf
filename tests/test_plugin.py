"""The pytest plugin: registered by entry point, its fixture serves a real LLMSim, scenarios and faults are
set per test and reset between tests, and the requests the server received can be read back."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import openai
import pytest

from llmsim.pytest_plugin import LLMSim

pytest_plugins = ["pytester"]

INNER = '''
import openai
import pytest


def test_scripted(llmsim):
    llmsim.load_scenario({"turns": [{"text": "scripted"}]})
    assert llmsim.client.responses.create(model="gpt-4o", input="hi").output_text == "scripted"
    assert llmsim.requests == [{"model": "gpt-4o", "input": "hi"}]


def test_faults(llmsim):
    llmsim.set_faults({"kind": "server_error", "first": 1})
    with pytest.raises(openai.InternalServerError):
        llmsim.client.responses.create(model="gpt-4o", input="hi")
    assert llmsim.client.responses.create(model="gpt-4o", input="hi").output_text


def test_each_test_starts_clean(llmsim):
    assert llmsim.requests == []
    assert llmsim.client.responses.create(model="gpt-4o", input="hi").output_text != "scripted"
'''


def test_registered_by_entry_point() -> None:
    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("llmsim") == "llmsim.pytest_plugin"


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    """Installed, the plugin loads in every pytest run of the environment: one that uses no fixture of it must
    not pay for the server, its web stack or the SDK (they cost ~1.5 s of a core when the plugin imported them)."""
    probe = ("import json, sys, pytest; before = set(sys.modules); import llmsim.pytest_plugin; "
             "print(json.dumps(sorted(set(sys.modules) - before)))")
    added = set(json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                          check=True).stdout))
    assert {name for name in added if name.startswith("llmsim")} == {"llmsim", "llmsim.config",
                                                                     "llmsim.pytest_plugin"}
    assert {name.split(".")[0] for name in added} <= {"llmsim", *sys.stdlib_module_names}, added
    heavy = {"flask", "faker", "gunicorn", "gevent", "openai", "httpx", "pydantic", "tiktoken", "yaml",
             "llmsim.app", "llmsim.testing", "ssl"}
    assert heavy.isdisjoint(added)


def test_fixture_in_a_fresh_pytest_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")  # the plugin loads from the entry point
    result.assert_outcomes(passed=3)


def test_the_handle(llmsim: LLMSim, tmp_path: Path) -> None:
    assert llmsim.base_url.endswith("/openai/v1")
    path = tmp_path / "scenario.yaml"
    path.write_text("turns:\n  - text: from a file\n")
    for source in (path, str(path)):
        llmsim.load_scenario(source)
        assert llmsim.client.responses.create(model="gpt-4o", input="hi").output_text == "from a file"
    llmsim.clear_scenario()
    llmsim.set_faults("429")
    with pytest.raises(openai.RateLimitError):
        llmsim.client.responses.create(model="gpt-4o", input="hi")
    assert llmsim.fault_log[-1]["fault"] == "rate_limit"
    llmsim.clear_faults()
    retrying = llmsim.openai_client(max_retries=3)
    assert retrying.max_retries == 3 and retrying.responses.create(model="gpt-4o", input="hi").output_text


WARNED = '''
def test_warned(llmsim):
    llmsim.client.responses.create(model="gpt-4o", input="hi", extra_body={"future_param": 1})
    assert llmsim.warnings == ["unknown parameter 'future_param'"]


def test_clean(llmsim):
    llmsim.client.responses.create(model="gpt-4o", input="hi")
    assert llmsim.warnings == []
'''


def test_warnings_and_the_option_that_fails_on_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_warned=WARNED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--llmsim-fail-on-warnings")
    result.assert_outcomes(passed=2, errors=1)  # test_warned passes, then its teardown fails it
    result.stdout.fnmatch_lines(["*LLMSim accepted with warnings: unknown parameter 'future_param'*"])
