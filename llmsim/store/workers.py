"""Which process runs a background response, and whether it still runs: a worker's identity as the store keeps it."""

from __future__ import annotations

import os
import uuid

_this: tuple[int, str] | None = None  # (pid, worker id) of this process, made again in a forked child


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the process name (state first); None where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()
    except OSError:
        return None


def _started(pid: int) -> str | None:
    """A process's boot id: this kernel boot's id and the process's start time in it. No other process, in any
    PID namespace of this machine, ever has the same; None where there is no /proc."""
    fields = _stat(pid)
    try:
        with open("/proc/sys/kernel/random/boot_id") as boot:
            return f"{boot.read().strip()}.{fields[19]}" if fields else None
    except OSError:
        return None


def this_worker() -> str:
    """This process as `pid:boot id`, read when asked (a master may import this module before forking its workers).

    The pid alone is not enough: a container restarted in a fresh PID namespace gives its new worker the pid
    of the dead one, which must not pass for alive. Without /proc the boot id is random, which still tells a
    new process from a dead one with its pid."""
    global _this
    pid = os.getpid()
    if _this is None or _this[0] != pid:
        _this = (pid, f"{pid}:{_started(pid) or uuid.uuid4().hex}")
    return _this[1]


def alive(worker: str) -> bool:
    """Whether the process that runs a background response still runs (SQLite is one machine's)."""
    if worker == this_worker():  # the common case, and every retrieve asks: no system call for it
        return True
    pid_text, _, boot = worker.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return True
    if boot and pid == os.getpid():
        return False  # our pid, another process's boot id: that process is gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _stat(pid)
    if fields is None:
        return True
    if fields[0] == "Z":  # a killed worker whose parent died too can linger as a zombie nobody reaps
        return False
    started = _started(pid)
    return not boot or "." not in boot or started is None or started == boot  # another process with its pid
