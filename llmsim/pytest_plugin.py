"""pytest plugin, registered by the `pytest11` entry point when llmsim is installed.

    def test_agent(llmsim):
        llmsim.load_scenario({"turns": [{"text": "Hello!"}]})
        reply = llmsim.client.responses.create(model="gpt-4o", input="hi")
        assert reply.output_text == "Hello!"
        assert llmsim.requests[0]["input"] == "hi"

`llmsim_server` (one per session) runs a real server on a free port with the flags of the
`llmsim_flags` fixture (override it in a conftest.py); `llmsim` is the per-test handle and
starts each test with no scenario, no faults and an empty transcript. Loading the plugin imports
only pytest and this module (a pytest run that uses no fixture of it pays ~5 ms): the server's
launcher, httpx and the openai SDK are imported when a test first uses a fixture.

Record once, replay afterwards:

    @pytest.mark.llmsim_cassette("weather-agent")
    def test_weather_agent(llmsim_cassette):
        reply = llmsim_cassette.client.responses.create(model="gpt-4o", input="Weather in Paris?")

`pytest --llmsim-record` runs such tests through a recording proxy in front of `--llmsim-upstream`
(the upstream key comes from OPENAI_API_KEY, or the variable `--llmsim-upstream-key-env` names) and writes
the cassettes to `cassettes/<name>/` beside the test file (or under `--llmsim-cassettes DIR`). Without the
flag the same test replays them; a request with no cassette fails the test with the nearest one named.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import ssl

    import httpx
    import openai

    from llmsim.testing import ServerProcess

ADMIN = "/llmsim/admin"


class LLMSim:
    """A running LLMSim: its URLs, a configured openai client, and the admin API as methods."""

    def __init__(self, server: ServerProcess, admin_key: str | None = None) -> None:
        import httpx

        self.server = server
        self.base_url = server.base_url
        headers = {"Authorization": f"Bearer {admin_key}"} if admin_key else {}
        self._admin: httpx.Client = httpx.Client(base_url=server.url + ADMIN, headers=headers, timeout=30,
                                                 verify=_tls())
        self.client = self.openai_client()

    def openai_client(self, **options: Any) -> openai.OpenAI:
        """An `openai.OpenAI` for this server; retries off unless `max_retries` says otherwise."""
        import openai

        if "http_client" not in options:
            options["http_client"] = openai.DefaultHttpxClient(verify=_tls())  # the SDK's own, sharing a context
        return openai.OpenAI(**{"base_url": self.base_url, "api_key": "sk-llmsim", "max_retries": 0, **options})

    def async_openai_client(self, **options: Any) -> openai.AsyncOpenAI:
        import openai

        if "http_client" not in options:
            options["http_client"] = openai.DefaultAsyncHttpxClient(verify=_tls())
        return openai.AsyncOpenAI(**{"base_url": self.base_url, "api_key": "sk-llmsim", "max_retries": 0, **options})

    # --- scenarios ----------------------------------------------------------------------------

    def load_scenario(self, scenario: dict[str, Any] | str | Path) -> dict[str, Any]:
        """A dict, a path to a YAML/JSON file, or YAML/JSON text; it plays from its first turn."""
        if isinstance(scenario, dict):
            return self._call("PUT", "/scenarios", json=scenario)
        return self._call("PUT", "/scenarios", content=_text(scenario), headers={"Content-Type": "application/yaml"})

    def clear_scenario(self) -> None:
        self._call("DELETE", "/scenarios")

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """Every request since the test began (the latest 1,000, up to 16 MiB): its body, model and the scenario
        step that answered it."""
        return self._call("GET", "/scenarios/transcript")["data"]

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the requests the server received since the test began, oldest first."""
        return [entry["request"] for entry in self.transcript]

    # --- faults (llmsim/chaos/faults.py) ------------------------------------------------------------

    def set_faults(self, *rules: dict[str, Any] | str, **config: Any) -> dict[str, Any]:
        """Replace the fault config: rules as dicts (`{"kind": "rate_limit", "first": 2}`) or kinds (`"500"`),
        plus any other FaultConfig field (`seed`, `rate_limits`)."""
        faults = [{"kind": rule} if isinstance(rule, str) else rule for rule in rules]
        return self._call("PUT", "/faults", json={"faults": faults, **config})

    def clear_faults(self) -> None:
        self._call("PUT", "/faults", json={})
        self._call("POST", "/faults/reset")

    @property
    def fault_log(self) -> list[dict[str, Any]]:
        """The chaos layer's log: each generating request with the fault applied to it."""
        return self._call("GET", "/requests")["data"]

    @property
    def warnings(self) -> list[str]:
        """What the server accepted without knowing it (unknown parameters, fields, enum values: the
        x-llmsim-warnings header of each answer) since the test began; `pytest --llmsim-fail-on-warnings` fails
        a test that leaves any."""
        return [warning for entry in self.fault_log for warning in entry.get("warnings", [])]

    def reset(self) -> None:
        """No scenario, no faults, empty transcript and logs."""
        self.clear_scenario()
        self.clear_faults()

    def close(self) -> None:
        self._admin.close()
        self.client.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._admin.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise AssertionError(f"LLMSim admin {method} {path}: {response.status_code} {response.text}")
        return json.loads(response.text)


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client the fixtures make. httpx builds one per client by default, loading the CA
    bundle (~25 ms of a core), and each test made two clients; the server is plain HTTP, so none was used."""
    import ssl

    return ssl.create_default_context()


def _warm() -> None:
    """The first handle's costs, paid while the server starts (on another core): httpx and the SDK imported, the TLS
    context built, and a client of each made once, as the first construction imports what it uses (~0.15 s)."""
    import httpx
    import openai

    httpx.Client(verify=_tls()).close()
    openai.OpenAI(base_url="http://127.0.0.1", api_key="unused",
                  http_client=openai.DefaultHttpxClient(verify=_tls())).close()


def _text(source: str | Path) -> str:
    """A file's text, or `source` itself when it is not a file's path."""
    try:
        return Path(source).read_text() if isinstance(source, Path) or Path(source).is_file() else source
    except OSError:  # a long YAML string is no file name
        if isinstance(source, Path):
            raise
        return source


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmsim", "LLMSim cassettes")
    group.addoption("--llmsim-record", action="store_true",
                    help="record the cassettes of tests marked llmsim_cassette through a proxy to the upstream")
    group.addoption("--llmsim-upstream", default="https://api.openai.com/v1",
                    help="the upstream base URL to record from (default: %(default)s)")
    group.addoption("--llmsim-upstream-key-env", default="OPENAI_API_KEY",
                    help="the environment variable holding the upstream's key (default: %(default)s)")
    group.addoption("--llmsim-fail-on-warnings", action="store_true",
                    help="fail a test whose requests the server accepted with warnings (llmsim.warnings)")
    group.addoption("--llmsim-cassettes", default=None, metavar="DIR",
                    help="where cassettes live (default: a cassettes/ folder beside each test file)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "llmsim_cassette(name, speed=0): record or replay this test's LLM traffic "
                                       "(the llmsim_cassette fixture)")


@pytest.fixture
def llmsim_cassette(request: pytest.FixtureRequest) -> Iterator[LLMSim]:
    """A server for one test: a recording proxy under --llmsim-record, else a replay of its cassettes."""
    marker = request.node.get_closest_marker("llmsim_cassette")
    if marker is None or not marker.args:
        raise pytest.UsageError("the llmsim_cassette fixture needs @pytest.mark.llmsim_cassette(\"name\")")
    name = str(marker.args[0])
    option = request.config.getoption
    root = Path(option("--llmsim-cassettes") or Path(str(request.node.path)).parent / "cassettes")
    directory = root / name
    if option("--llmsim-record"):
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("*.json"):  # a recording replaces the cassette's old interactions
            old.unlink()
        flags: tuple[str, ...] = ("--backend", "proxy", "--upstream", option("--llmsim-upstream"), "--record",
                                  str(directory), "--upstream-api-key-env", option("--llmsim-upstream-key-env"))
    else:
        if not any(directory.glob("*.json")):
            pytest.fail(f"LLMSim: no cassette '{name}' in {root}: record it once with `pytest --llmsim-record` "
                        f"(and --llmsim-upstream URL)", pytrace=False)
        flags = ("--backend", "replay", "--cassettes", str(directory), "--speed",
                 str(marker.kwargs.get("speed", 0)))
    from llmsim.testing import ServerProcess

    with ServerProcess(*flags) as server:
        handle = LLMSim(server)
        try:
            yield handle
        finally:
            handle.close()


@pytest.fixture(scope="session")
def llmsim_flags() -> tuple[str, ...]:
    """`llmsim serve` flags for the session's server: no pacing and a fixed seed, for fast, repeatable tests."""
    return ("--speed", "0", "--seed", "0")


@pytest.fixture(scope="session")
def llmsim_server(llmsim_flags: tuple[str, ...]) -> Iterator[ServerProcess]:
    from llmsim.testing import ServerProcess

    server = ServerProcess(*llmsim_flags).launch()
    try:
        _warm()
        yield server.wait_until_up()
    finally:
        server.stop()


@pytest.fixture
def llmsim(llmsim_server: ServerProcess, llmsim_flags: tuple[str, ...], request: pytest.FixtureRequest
           ) -> Iterator[LLMSim]:
    flags = dict(zip(llmsim_flags, llmsim_flags[1:], strict=False))
    api_key = flags.get("--api-key", "").split(",")[0] or None  # guards the admin API when no admin key is set
    handle = LLMSim(llmsim_server, flags.get("--admin-key", api_key))
    handle.reset()
    try:
        yield handle
        warned = handle.warnings if request.config.getoption("--llmsim-fail-on-warnings") else []
        if warned:
            pytest.fail("LLMSim accepted with warnings: " + "; ".join(warned), pytrace=False)
    finally:
        handle.reset()
        handle.close()
