"""Start a real LLMSim server (and a real Redis) in a subprocess on a free port: for tests, benchmarks and examples."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from types import TracebackType
from typing import Self

STARTUP_TIMEOUT = 30.0  # seconds a server may take to start on an idle machine
STARTUP_TIMEOUT_ENV = "LLMSIM_STARTUP_TIMEOUT"  # seconds, as they are: overrides the limit and its scaling


def startup_limit(seconds: float) -> float:
    """What `seconds` (a start's limit on an idle machine) becomes: `LLMSIM_STARTUP_TIMEOUT` when set, else
    `seconds` times the machine's load per core when that is above 1 (a loaded 2-core CI runner once took over 30 s
    for a start that takes 1 s at rest)."""
    override = os.environ.get(STARTUP_TIMEOUT_ENV)
    if override:
        try:
            return max(0.1, float(override))
        except ValueError:
            raise RuntimeError(f"{STARTUP_TIMEOUT_ENV}={override!r}: expected seconds, e.g. 120") from None
    return seconds * load_per_core()


def load_per_core() -> float:
    """The 1-minute load average per core, at least 1."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:  # no load average on this platform
        return 1.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """`with ServerProcess("--seed", "7") as server: server.base_url` → a running server, stopped on exit.

    `startup_timeout` is the limit on an idle machine: it grows with the machine's load per core, and
    `LLMSIM_STARTUP_TIMEOUT` (seconds) replaces it (`startup_limit`). A start that fails says why with the
    server's log.

    It is up once `/llmsim/health` answers: a probe that /metrics does not count (a probe of `/models` that timed
    out on a loaded machine and came again was counted twice). `stop()` ends it at once, as gunicorn does on
    SIGINT, without the graceful wait of SIGTERM (up to a second for a worker to notice, and more while a client
    keeps a connection open): a test about that wait sends SIGTERM itself.

    A subclass serves another command (bench/servers.py's BenchServer: the benches' floors) by changing `command`,
    `probe` and `stop_signal`."""

    name = "llmsim"
    probe = "/llmsim/health"  # the path asked until it answers, with any status
    stop_signal = signal.SIGINT  # gunicorn's quick stop; its workers exit on SIGQUIT
    cwd: str | None = None

    def __init__(self, *flags: str, env: dict[str, str] | None = None,
                 startup_timeout: float = STARTUP_TIMEOUT) -> None:
        self.flags = flags
        self.env = env or {}
        self.startup_timeout = startup_timeout
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.launched = 0.0  # time.monotonic() when its process started
        self.stopping = False  # asked to stop
        # The server's output for as long as it runs (not a `with`): `log` reads it back by name.
        self.log_file = tempfile.NamedTemporaryFile(prefix="llmsim-", suffix=".log", delete=False)  # noqa: SIM115

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/openai/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llmsim", "serve", "--host", "127.0.0.1", "--port", str(self.port), *self.flags]

    def start(self) -> Self:
        return self.launch().wait_until_up()

    def launch(self) -> Self:
        """The server's process started, not yet answering: work done before `wait_until_up` runs beside its
        start (the pytest plugin imports the SDK meanwhile)."""
        self.stopping = False
        self.process = subprocess.Popen(self.command(), env={**os.environ, **self.env}, stdout=self.log_file,
                                        stderr=subprocess.STDOUT, cwd=self.cwd)
        self.launched = time.monotonic()
        return self

    def wait_until_up(self) -> Self:
        assert self.process is not None, "launch() first"
        limit, looked = startup_limit(self.startup_timeout), time.monotonic()
        while (now := time.monotonic()) < self.launched + limit:
            if now - looked >= 1:  # the load may rise while it starts
                limit, looked = max(limit, startup_limit(self.startup_timeout)), now
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}{self.probe}", timeout=1):
                    return self
            except urllib.error.HTTPError:
                return self  # it answers (a 503 while its Redis is away, a 404, say): it is up
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"{self.name} did not start within {limit:.3g} s ({self.startup_timeout:g} s at rest, "
                           f"load {load_per_core():.2g} per core; {STARTUP_TIMEOUT_ENV} sets it). Its log "
                           f"({self.log_file.name}):\n{self.log()}")

    def log(self) -> str:
        """What the server printed so far (its log file is kept for inspection after a failure)."""
        with open(self.log_file.name, errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        self.signal_stop()
        if self.process and self.process.poll() is None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def signal_stop(self) -> None:
        """Asks it to stop, without waiting: `stop_all` asks every server first, so their stops overlap."""
        if self.process and self.process.poll() is None and not self.stopping:
            self.process.send_signal(self.stop_signal)  # once: a second SIGINT would cut gunicorn's own stop short
            self.stopping = True

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()


def stop_all(servers: Iterable[ServerProcess]) -> None:
    """Stops several servers in about the time of one (each stop waits ~0.3 s for its workers to exit)."""
    servers = list(servers)
    for server in servers:
        server.signal_stop()
    for server in servers:
        server.stop()


class RedisServer:
    """`with RedisServer() as redis: redis.url` → a real `redis-server` on a free port (Debian: `apt-get install
    redis-server`), writing every change to its append-only file before answering, so a `restart()` keeps all
    that was acknowledged. With `password` and `tls` it asks what a production Redis asks, and `url` gives both."""

    def __init__(self, startup_timeout: float = 10.0, fsync: str = "always", password: str = "",
                 tls: bool = False) -> None:
        self.startup_timeout = startup_timeout
        self.fsync = fsync
        self.password = password  # required of every client (`requirepass`)
        self.tls = tls  # TLS only, with a certificate for 127.0.0.1 from a CA made here (`ca`)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="llmsim-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        if self.tls:
            return f"rediss://{auth}127.0.0.1:{self.port}/0?ssl_ca_certs={self.ca}"
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def ca(self) -> str:
        return os.path.join(self.dir, "ca.pem")

    def _arguments(self) -> list[str]:
        arguments = ["--requirepass", self.password] if self.password else []
        if not self.tls:
            return [*arguments, "--port", str(self.port)]
        key, cert = os.path.join(self.dir, "key.pem"), os.path.join(self.dir, "cert.pem")
        if not os.path.exists(self.ca):
            import trustme  # the [test] extra's

            authority = trustme.CA()
            authority.cert_pem.write_to_path(self.ca)
            issued = authority.issue_cert("127.0.0.1")
            issued.private_key_pem.write_to_path(key)
            issued.cert_chain_pems[0].write_to_path(cert)
        return [*arguments, "--port", "0", "--tls-port", str(self.port), "--tls-auth-clients", "no",
                "--tls-ca-cert-file", self.ca, "--tls-cert-file", cert, "--tls-key-file", key]

    def _answers(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as plain, (
                ssl.create_default_context(cafile=self.ca).wrap_socket(plain, server_hostname="127.0.0.1")
                if self.tls else contextlib.nullcontext(plain)) as sock:
            sock.sendall((f"AUTH {self.password}\r\n" if self.password else "").encode() + b"PING\r\n")
            return sock.recv(64).endswith(b"+PONG\r\n")

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found: apt-get install redis-server")
        self.process = subprocess.Popen(
            [binary, *self._arguments(), "--bind", "127.0.0.1", "--dir", self.dir, "--save", "",
             "--appendonly", "yes", "--appendfsync", self.fsync, "--logfile", os.path.join(self.dir, "log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        limit = startup_limit(self.startup_timeout)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}:\n{self._log()}")
            try:
                if self._answers():
                    return self
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server did not start within {limit:.3g} s ({STARTUP_TIMEOUT_ENV} sets it):\n"
                           f"{self._log()}")

    def _log(self) -> str:
        try:
            with open(os.path.join(self.dir, "log"), errors="replace") as f:
                return f.read()
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
