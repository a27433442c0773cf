"""No web page can drive a local LLMSim (issue 34, finding 1), in Debian's Chromium through Playwright and with raw
`Host` headers: a page from another origin can neither post a scenario as text/plain, nor open a WebSocket, nor
frame the dashboard; DNS rebinding (a foreign `Host`) is refused before routing, the lean proxy path included; a
page on an allowed origin gets CORS answers it can read."""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser

from chromium import launched
from llmsim.api.guard import Policy
from llmsim.config import Settings
from llmsim.testing import ServerProcess

EVIL = "evil.test"  # resolved to 127.0.0.1 by Chromium only: a foreign site on this machine
SCENARIO_YAML = "name: pwned\nturns:\n  - text: the page's words\n"
Start = Callable[..., ServerProcess]

ATTACK = """<!doctype html><html><body><script>
const target = "%(target)s";
window.results = {};
async function attack() {
  try {  // a "simple" request: no preflight, the response is opaque, but the POST would still land
    await fetch(target + "/llmsim/admin/scenarios", {method: "POST", mode: "no-cors",
      headers: {"Content-Type": "text/plain"}, body: %(yaml)s});
    results.post = "sent";
  } catch (e) { results.post = "blocked"; }
  try {
    const r = await fetch(target + "/llmsim/admin/requests");
    results.read = "read " + r.status;
  } catch (e) { results.read = "blocked"; }
  results.ws = await new Promise((resolve) => {
    const ws = new WebSocket(target.replace("http", "ws") + "/v1/responses");
    ws.onopen = () => { ws.send(JSON.stringify({type: "response.create", model: "gpt-4o", input: "hi"}));
                        resolve("open"); };
    ws.onerror = () => resolve("error");
    setTimeout(() => resolve("timeout"), 5000);
  });
  results.done = true;
}
attack();
</script><iframe id="frame" src="%(target)s/llmsim/ui"></iframe></body></html>"""

FRIEND = """<!doctype html><html><body><script>
window.results = {};
fetch("%(target)s/v1/responses", {method: "POST", headers: {"Content-Type": "application/json",
      "Authorization": "Bearer sk-test"}, body: JSON.stringify({model: "gpt-4o", input: "hi"})})
  .then(r => r.json()).then(body => { results.status = body.status; results.done = true; })
  .catch(e => { results.error = String(e); results.done = true; });
</script></body></html>"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched(f"--host-resolver-rules=MAP {EVIL} 127.0.0.1") as browser:
        yield browser


@pytest.fixture(scope="module")
def pages() -> Iterator[tuple[int, dict[str, str]]]:
    """A second web server on this machine, serving whatever page a test puts at a path: (port, pages)."""
    served: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = served.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # Chromium may leave early
                self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], served
    httpd.shutdown()


def test_a_foreign_page_can_neither_post_nor_open_a_websocket_nor_frame_the_dashboard(
        shared_server: Start, browser: Browser, pages: tuple[int, dict[str, str]]) -> None:
    server = shared_server()
    port, served = pages
    served["/attack"] = ATTACK % {"target": server.url, "yaml": json.dumps(SCENARIO_YAML)}
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"http://{EVIL}:{port}/attack")
        page.wait_for_function("window.results && window.results.done", timeout=15_000)
        results = page.evaluate("window.results")
        page.wait_for_load_state("load")  # the frame has had its answer
        framed = [f for f in page.frames if f is not page.main_frame]
        dashboard_in_frame = bool(framed) and framed[0].url.startswith(server.url) and \
            framed[0].locator("#k-rps").count() > 0
        rebound = page.goto(f"http://{EVIL}:{server.port}/llmsim/admin/requests")  # DNS rebinding, in the browser
    finally:
        context.close()
    assert rebound is not None and rebound.status == 403
    assert results["read"] == "blocked"  # a 403 without CORS headers: the page learns nothing
    assert results["ws"] == "error"  # the upgrade got a 403, never a 101
    assert not dashboard_in_frame  # X-Frame-Options / frame-ancestors: Chromium shows its error page instead
    # and the server did nothing the page asked: no scenario, no request
    assert httpx.get(f"{server.url}/llmsim/admin/scenarios").json()["scenario"] is None
    assert httpx.get(f"{server.url}/llmsim/admin/requests").json()["data"] == []


def test_a_page_on_an_allowed_origin_reads_the_api_through_cors(
        shared_server: Start, browser: Browser, pages: tuple[int, dict[str, str]]) -> None:
    server = shared_server()
    port, served = pages
    served["/friend"] = FRIEND % {"target": server.url}
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"http://localhost:{port}/friend")  # a local web app: loopback origins are allowed by default
        page.wait_for_function("window.results && window.results.done", timeout=15_000)
        results = page.evaluate("window.results")
    finally:
        context.close()
    assert results == {"status": "completed", "done": True}  # preflighted (JSON, Authorization), then read


NEIGHBOUR = """<!doctype html><html><body><script>
const target = "%(target)s";
window.results = {};
async function status(path, options) {
  try { return (await fetch(target + path, options)).status; } catch (e) { return "blocked"; }
}
async function probe() {
  results.log = await status("/llmsim/admin/requests");
  results.state = await status("/llmsim/ui/api/state");
  results.faults = await status("/llmsim/admin/faults", {method: "PUT", headers: {"Content-Type": "application/json"},
                                                         body: JSON.stringify({faults: []})});
  try {  // a simple request: no preflight, the answer opaque, but the pause would land
    await fetch(target + "/llmsim/admin/faults/pause", {method: "POST", mode: "no-cors"});
  } catch (e) {}
  results.api = await status("/v1/models");
  results.ws = await new Promise((resolve) => {
    const ws = new WebSocket(target.replace("http", "ws") + "/v1/responses");
    ws.onopen = () => ws.send(JSON.stringify({type: "response.create", model: "gpt-4o", input: "hi"}));
    ws.onmessage = (m) => { if (JSON.parse(m.data).type === "response.completed") resolve("read"); };
    ws.onerror = () => resolve("error");
    setTimeout(() => resolve("timeout"), 10000);
  });
  results.done = true;
}
probe();
</script></body></html>"""


@pytest.mark.parametrize("named", [False, True], ids=["default", "named-origin"])
def test_a_page_on_another_localhost_port_reaches_only_the_api_unless_named(
        start_server: Start, browser: Browser, pages: tuple[int, dict[str, str]], named: bool) -> None:
    """Issue 46, item 1: the loopback default let any local page read the request log, pause faults and read an
    answer over a WebSocket; now only the API answers it, and --cors-origins naming its origin opens the rest."""
    port, served = pages
    page_origin = f"http://localhost:{port}"
    flags = ("--cors-origins", f"loopback,{page_origin}") if named else ()
    server = start_server("--fault", "500;models=nothing-matches", *flags)
    httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": "a private prompt"}).raise_for_status()
    served["/neighbour"] = NEIGHBOUR % {"target": server.url}
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{page_origin}/neighbour")
        page.wait_for_function("window.results && window.results.done", timeout=30_000)
        results = page.evaluate("window.results")
    finally:
        context.close()
    assert results["api"] == 200  # the API keeps loopback CORS
    if named:
        assert results == {"log": 200, "state": 200, "faults": 200, "api": 200, "ws": "read", "done": True}
        return
    assert results == {"log": "blocked", "state": "blocked", "faults": "blocked", "api": 200, "ws": "error",
                       "done": True}
    faults = httpx.get(f"{server.url}/llmsim/admin/faults").json()
    assert [rule["kind"] for rule in faults["faults"]] == ["server_error"]  # neither replaced nor paused
    assert len(httpx.get(f"{server.url}/llmsim/admin/requests").json()["data"]) == 1  # ours: the socket made none


def raw(port: int, method: str, path: str, host: str, body: bytes = b"",
        headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request with the `Host` header as given (DNS rebinding: the browser names the attacker's host)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host)
    for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
        conn.putheader(name, value)
    conn.endheaders(body)
    response = conn.getresponse()
    answer = (response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    conn.close()
    return answer


def test_dns_rebinding_a_foreign_host_is_refused_before_routing(shared_server: Start) -> None:
    server = shared_server()
    port = server.port
    fault = json.dumps({"faults": [{"kind": "500", "rate": 1.0}]}).encode()
    for host in (f"{EVIL}:{port}", EVIL, f"127.0.0.1.{EVIL}:{port}", "attacker.example", "[::1].evil:1"):
        for method, path, body in (("GET", "/llmsim/admin/requests", b""), ("PUT", "/llmsim/admin/faults", fault),
                                   ("GET", "/llmsim/ui/api/state", b""), ("POST", "/v1/responses", b"{}"),
                                   ("GET", "/llmsim/nowhere", b"")):
            status, _, answer = raw(port, method, path, host, body, {"Content-Type": "application/json"})
            assert status == 403, (host, path)
            assert json.loads(answer)["error"]["code"] == "host_not_allowed"
    assert httpx.get(f"{server.url}/llmsim/admin/faults").json().get("faults", []) == []  # nothing was set
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}", f"app.localhost:{port}",
                 "127.0.0.2"):
        assert raw(port, "GET", "/llmsim/admin/requests", host)[0] == 200, host


OPENED = ("--allowed-hosts", "llmsim.internal,.svc.cluster.local", "--cors-origins", "https://app.example.com")


def test_allowed_hosts_opens_named_hosts_and_only_those(shared_server: Start) -> None:
    server = shared_server(*OPENED)
    for host, status in (("llmsim.internal:8080", 200), ("api.svc.cluster.local", 200), ("svc.cluster.local", 200),
                         ("localhost", 200), ("other.internal", 403), ("cluster.local", 403)):
        assert raw(server.port, "GET", "/llmsim/health", host)[0] == status, host


def test_binding_beyond_loopback_accepts_any_host_unless_hosts_are_named() -> None:
    """In a container (0.0.0.0) or on a pod's address, clients name the server by names it cannot know: remote
    access is what the binding asks for (Jupyter's allow_remote_access). --allowed-hosts pins them again."""
    for bound in ("0.0.0.0", "::", "10.1.2.3"):
        assert Policy(Settings(host=bound)).host_allowed("my-service.default.svc:8080")
        pinned = Policy(Settings(host=bound, allowed_hosts=["my-service"]))
        assert pinned.host_allowed("my-service:8080") and not pinned.host_allowed(f"{EVIL}:8080")
    for bound in ("127.0.0.1", "localhost", "::1"):
        assert not Policy(Settings(host=bound)).host_allowed(f"{EVIL}:8080")
    assert Policy(Settings(host="127.0.0.1", allowed_hosts=["*"])).host_allowed(f"{EVIL}:8080")


def test_origins_outside_the_list_get_403_everywhere_and_allowed_ones_get_cors(shared_server: Start) -> None:
    server = shared_server()
    for origin in (f"http://{EVIL}", "null", "https://example.com", "http://127.0.0.1.evil.test:80"):
        for method, path in (("GET", "/llmsim/admin/requests"), ("POST", "/llmsim/admin/faults/reset"),
                             ("POST", "/v1/responses"), ("GET", "/v1/models"), ("OPTIONS", "/v1/responses"),
                             ("GET", "/llmsim/ui/")):
            refused = httpx.request(method, server.url + path, headers={"Origin": origin}, json={})
            assert refused.status_code == 403, (origin, path)
            assert "access-control-allow-origin" not in refused.headers
    upgrade = httpx.get(f"{server.url}/v1/responses", headers={
        "Origin": f"http://{EVIL}", "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert upgrade.status_code == 403

    origin = "http://localhost:5173"
    preflight = httpx.options(f"{server.url}/v1/responses", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == origin
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert preflight.headers["access-control-allow-headers"] == "authorization, content-type"
    answer = httpx.get(f"{server.url}/v1/models", headers={"Origin": origin})
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == origin
    assert "Origin" in answer.headers["vary"]
    own = httpx.post(f"{server.url}/llmsim/admin/faults/reset", headers={"Origin": server.url})  # the dashboard's
    assert own.status_code == 200


def test_cors_origins_replaces_the_loopback_default(shared_server: Start) -> None:
    server = shared_server(*OPENED)
    assert httpx.get(f"{server.url}/v1/models", headers={"Origin": "https://app.example.com"}).status_code == 200
    assert httpx.get(f"{server.url}/v1/models", headers={"Origin": "http://localhost:3000"}).status_code == 403


def test_admin_writes_take_only_json_and_scenarios_yaml_with_its_own_type(shared_server: Start) -> None:
    server = shared_server()
    admin = f"{server.url}/llmsim/admin"
    for method, path, content_type, body in (
            ("POST", "/scenarios", "text/plain", SCENARIO_YAML),
            ("PUT", "/scenarios", "application/x-www-form-urlencoded", "name=x"),
            ("PUT", "/faults", "text/plain", json.dumps({"faults": []})),
            ("POST", "/faults/pause", "multipart/form-data; boundary=x", "--x--"),
            ("POST", "/faults/reset", "text/plain", ""),
            ("PUT", "/faults", "", json.dumps({"faults": []}))):
        headers = {"Content-Type": content_type} if content_type else {}
        refused = httpx.request(method, admin + path, headers=headers, content=body.encode())
        assert refused.status_code == 415, (path, content_type)
        assert refused.json()["error"]["code"] == "unsupported_content_type"
    assert httpx.get(f"{admin}/scenarios").json()["scenario"] is None
    assert httpx.get(f"{admin}/faults").json().get("faults", []) == []
    loaded = httpx.post(f"{admin}/scenarios", headers={"Content-Type": "application/yaml"}, content=SCENARIO_YAML)
    assert loaded.status_code == 200 and loaded.json()["scenario"]["name"] == "pwned"
    assert httpx.delete(f"{admin}/scenarios").status_code == 200  # no body: no content type needed
    assert httpx.post(f"{admin}/faults/reset").status_code == 200


def test_the_dashboard_cannot_be_framed_and_runs_only_its_own_files(shared_server: Start) -> None:
    server = shared_server()
    for path in ("/llmsim/ui", "/llmsim/ui/dashboard.js", "/llmsim/ui/api/state"):
        headers = httpx.get(server.url + path).headers
        assert headers["x-frame-options"] == "DENY", path
        policy = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy
        assert "script-src" not in policy  # scripts fall back to 'self': no inline script, no eval


def test_the_lean_proxy_path_is_guarded_too(shared_server: Start) -> None:
    upstream = shared_server()
    proxy = shared_server("--backend", "proxy", "--upstream", upstream.base_url, "--upstream-keyless")
    body = json.dumps({"model": "gpt-4o", "input": "hi"}).encode()
    assert raw(proxy.port, "POST", "/v1/responses", f"{EVIL}:{proxy.port}", body,
               {"Content-Type": "application/json"})[0] == 403
    assert raw(proxy.port, "POST", "/v1/responses", f"127.0.0.1:{proxy.port}", body,
               {"Content-Type": "application/json", "Origin": f"http://{EVIL}"})[0] == 403
    status, headers, _ = raw(proxy.port, "POST", "/v1/responses", f"127.0.0.1:{proxy.port}", body,
                             {"Content-Type": "application/json", "Origin": "http://localhost:3000"})
    assert status == 200 and headers["access-control-allow-origin"] == "http://localhost:3000"


def test_an_unset_upstream_key_variable_stops_start_up_naming_it(tmp_path: Any) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    started = subprocess.run([sys.executable, "-m", "llmsim", "serve", "--backend", "proxy", "--upstream",
                              "http://127.0.0.1:9/v1", "--upstream-api-key-env", "MY_UPSTREAM_KEY"],
                             env={**env, "PYTHONPATH": ":".join(sys.path)}, capture_output=True, text=True,
                             timeout=60)
    assert started.returncode == 2
    lines = started.stderr.strip().splitlines()
    assert len(lines) == 1 and "MY_UPSTREAM_KEY" in lines[0] and "--upstream-keyless" in lines[0], lines
