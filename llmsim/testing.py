"""Start a real LLMSim server (and a real Redis) in a subprocess on a free port: for tests, benchmarks and examples."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from types import TracebackType


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """`with ServerProcess("--seed", "7") as server: server.base_url` → a running server, stopped on exit."""

    def __init__(self, *flags: str, env: dict[str, str] | None = None, startup_timeout: float = 30.0) -> None:
        self.flags = flags
        self.env = env or {}
        self.startup_timeout = startup_timeout
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log_file = tempfile.NamedTemporaryFile(prefix="llmsim-", suffix=".log", delete=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/openai/v1"

    def start(self) -> "ServerProcess":
        command = [sys.executable, "-m", "llmsim", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                   *self.flags]
        self.process = subprocess.Popen(command, env={**os.environ, **self.env}, stdout=self.log_file,
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llmsim exited with {self.process.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=1):
                    return self
            except urllib.error.HTTPError:
                return self  # it answers (with an auth error, say): it is up
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"llmsim did not start within {self.startup_timeout}s")

    def log(self) -> str:
        """What the server printed so far (its log file is kept for inspection after a failure)."""
        with open(self.log_file.name, errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()


class RedisServer:
    """`with RedisServer() as redis: redis.url` → a real `redis-server` on a free port (Debian: `apt-get install
    redis-server`), writing every change to its append-only file before answering, so a `restart()` keeps all
    that was acknowledged."""

    def __init__(self, startup_timeout: float = 10.0, fsync: str = "always") -> None:
        self.startup_timeout = startup_timeout
        self.fsync = fsync
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="llmsim-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found: apt-get install redis-server")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir, "--save", "",
             "--appendonly", "yes", "--appendfsync", self.fsync, "--logfile", os.path.join(self.dir, "log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server did not start within {self.startup_timeout}s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
