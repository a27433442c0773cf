"""Browser-origin safety, before anything routes: only `Host` names of this server, only allowed `Origin`s.

A server on loopback is reachable by every web page its user opens. A page may send "simple" requests (a
text/plain POST, a form, a WebSocket upgrade) with no CORS preflight, and DNS rebinding lets it read the answers
by naming its own host. So, as Jupyter does, a request whose `Host` does not name this server, or whose `Origin`
(which browsers send on every cross-origin request and every WebSocket upgrade) is not allowed, gets a 403 here,
before routing. Pages on any loopback origin may call the API (a local web app); the admin API, the dashboard and
WebSocket upgrades are for the page's own origin and the origins named one by one: a page on another local port
must not read every prompt, set faults, or hold a socket no CORS check covers. It wraps the whole WSGI app, so
the lean proxy path (llmsim/api/forward.py) and the WebSocket upgrade are covered too. Allowed origins get CORS
headers, and their preflights are answered here.

Bound beyond loopback (0.0.0.0 in a container, a pod's address), any `Host` is accepted unless `--allowed-hosts`
names them: the binding asks for remote access, and a container's or Kubernetes service's names are not known
here (Jupyter's `allow_remote_access` reasoning). Origins are checked however the server is bound.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from llmsim.config import Settings
from llmsim.errors import APIError

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
ANY = "*"
LOOPBACK = "loopback"  # --cors-origins' name for http(s) origins on localhost or a loopback address, any port
PRIVATE = "/llmsim/"  # the admin API and the dashboard: same-origin (or named origins) only
METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
PREFLIGHT_MAX_AGE = "600"
CACHED = 256  # decisions remembered per header
CACHED_SIZE = 600  # ... each for a value (a Host and Origin pair) this long at most
_NETLOC = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::\d{1,5})?")
_HEADER_LIST = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$")


def is_loopback(host: str) -> bool:
    """`localhost`, a name under `.localhost` (browsers resolve those to loopback, RFC 6761) or a loopback IP."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or mapped is not None and mapped.is_loopback


def is_wildcard(host: str) -> bool:
    """An address that binds every interface."""
    return host in ("", "0.0.0.0", "::", "[::]", "*")


def _hostname(netloc: str) -> str | None:
    """The host of `host[:port]` (an IPv6 address in brackets), lower-case, brackets off; None when it is not one."""
    match = _NETLOC.fullmatch(netloc)
    return match.group(1).lower().strip("[]") if match else None


class Policy:
    """Which `Host` values and `Origin`s this server accepts, from its settings."""

    def __init__(self, settings: Settings) -> None:
        self.hosts = {h.lower() for h in settings.allowed_hosts}
        bound = settings.host.lower().strip("[]")
        self.any_host = ANY in self.hosts or not self.hosts and not is_loopback(bound)  # remote access asked for
        if not is_wildcard(bound):
            self.hosts.add(bound)
        origins = [o.strip().rstrip("/").lower() for o in settings.cors_origins if o.strip()]
        self.any_origin = ANY in origins
        self.loopback_origins = LOOPBACK in origins
        self.origins = set(origins) - {ANY, LOOPBACK}
        # decisions by the header's value: parsing an address costs ~5 µs, a lookup ~0.1 (bounded: the values are
        # the client's to choose)
        self._hosts: dict[str | None, bool] = {}
        self._origins: dict[tuple[str, str | None, bool], bool] = {}

    def host_allowed(self, host: str | None) -> bool:
        return _cached(self._hosts, host, lambda: self._host_allowed(host))

    def origin_allowed(self, origin: str, host: str | None, private: bool = False) -> bool:
        """`origin`: as the browser sent it. The page's own origin (the dashboard's) is always allowed. `private`:
        the admin API, the dashboard or a WebSocket (which no CORS guards: an open socket reads everything), which
        only the page's own origin and the origins --cors-origins names one by one (or `*`) may use, never every
        loopback origin."""
        return _cached(self._origins, (origin, host, private), lambda: self._origin_allowed(origin, host, private))

    def _host_allowed(self, host: str | None) -> bool:
        """No `Host` at all is HTTP/1.0 from a tool, never a browser's."""
        if self.any_host or not host:
            return True
        name = _hostname(host)
        if name is None:
            return False
        return is_loopback(name) or any(name == h or h.startswith(".") and (name.endswith(h) or name == h[1:])
                                        for h in self.hosts)

    def _origin_allowed(self, origin: str, host: str | None, private: bool) -> bool:
        origin = origin.strip().rstrip("/").lower()
        scheme, _, netloc = origin.partition("://")
        if scheme not in ("http", "https") or not netloc or (name := _hostname(netloc)) is None:
            return False  # "null" (a sandboxed frame, a file), or not an origin
        if host and netloc == host.lower():
            return True
        return self.any_origin or origin in self.origins or not private and self.loopback_origins and \
            is_loopback(name)


K = TypeVar("K")


def _cached(cache: dict[K, bool], key: K, decide: Callable[[], bool]) -> bool:
    if len(repr(key)) > CACHED_SIZE:  # an odd one: decided, not remembered
        return decide()
    found = cache.get(key)
    if found is None:
        if len(cache) >= CACHED:
            cache.clear()
        found = cache[key] = decide()
    return found


class Guard:
    """WSGI: the `Host` and `Origin` checks, then `wsgi` with CORS headers added for an allowed cross origin."""

    def __init__(self, wsgi: WSGIApp, settings: Settings) -> None:
        self.wsgi = wsgi
        self.policy = Policy(settings)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        host: str | None = environ.get("HTTP_HOST")
        if not self.policy.host_allowed(host):
            return _refuse(start_response, f"Host '{(host or '')[:200]}' does not name this server: add it with "
                                           "--allowed-hosts to serve it.", "host_not_allowed")
        origin = environ.get("HTTP_ORIGIN")
        if origin is None:
            return self.wsgi(environ, start_response)
        private = environ.get("PATH_INFO", "").startswith(PRIVATE) or \
            environ.get("HTTP_UPGRADE", "").lower() == "websocket"
        if not self.policy.origin_allowed(origin, host, private):
            return _refuse(start_response, f"Origin '{origin[:200]}' is not allowed: add it with --cors-origins "
                                           "to let its pages call this server" + (
                                               " (the admin API, the dashboard and WebSockets: named origins only)"
                                               if private else "") + ".", "origin_not_allowed")
        cors = [("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
                ("Access-Control-Expose-Headers", "*")]
        if environ.get("REQUEST_METHOD") == "OPTIONS" and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in environ:
            return _preflight(environ, start_response, cors)

        def with_cors(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, [*headers, *cors], exc_info)

        return self.wsgi(environ, with_cors)


def _preflight(environ: dict[str, Any], start_response: Callable[..., Any],
               cors: list[tuple[str, str]]) -> Iterable[bytes]:
    """An allowed origin's CORS preflight: any method and the headers it asks for (a bearer key included)."""
    headers = [*cors[:1], ("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"),
               ("Access-Control-Allow-Methods", METHODS), ("Access-Control-Max-Age", PREFLIGHT_MAX_AGE)]
    asked = environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS", "").strip()
    if asked and len(asked) <= 2000 and _HEADER_LIST.match(asked):
        headers.append(("Access-Control-Allow-Headers", asked))
    if environ.get("HTTP_ACCESS_CONTROL_REQUEST_PRIVATE_NETWORK", "").lower() == "true":
        headers.append(("Access-Control-Allow-Private-Network", "true"))  # Chrome's Private Network Access
    start_response("204 No Content", headers)
    return []


def _refuse(start_response: Callable[..., Any], message: str, code: str) -> Iterable[bytes]:
    body = json.dumps(APIError(message, status=403, code=code).body(), separators=(",", ":")).encode()
    start_response("403 Forbidden", [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                     ("Vary", "Origin")])
    return [body]
