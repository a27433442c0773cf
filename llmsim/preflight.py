"""What stops `llmsim serve` from starting, said in one line before it binds: the flag, and the file and field.

The checks run in a forked child while the serving process imports gunicorn. With --workers N that process is
gunicorn's master, which forks the workers and then only watches them, for the server's life: what the checks import
(pydantic, the profiles, the stores and Redis's client, ~17 MB) stays out of it, and each worker imports what it
uses after its fork. With one worker, what only the checks use (the files they read, Redis's client) stays out of
the serving process. A server started with none of the flags they read (the simulator on the profiles it ships,
which the tests check) starts no child.
"""

from __future__ import annotations

import os
import sys
import traceback

from llmsim.backends.proxy.keys import missing_key
from llmsim.config import Settings

CHECKED = ("backend", "profiles_dir", "faults_file", "fault_rules", "rpm", "tpm", "itpm", "otpm", "scenario_file",
           "store", "upstream", "record_dir", "cassettes_dir")  # the settings `problem` reads
DEFAULTS = Settings()


def start(settings: Settings) -> int | None:
    """The child that checks `settings` (its pid): it says what is wrong on stderr and exits 2, or exits 0. None:
    every setting the checks read is at its default."""
    if all(getattr(settings, name) == getattr(DEFAULTS, name) for name in CHECKED):
        return None
    sys.stdout.flush()
    sys.stderr.flush()  # nothing buffered before the fork is written twice
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        found = problem(settings)
        if found:
            print(f"llmsim: {found}", file=sys.stderr)
        status = 2 if found else 0
    except Exception:  # noqa: BLE001 - a bug in a check: its traceback, and the server does not start
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(status)


def passed(child: int | None) -> bool:
    return child is None or os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0


def problem(settings: Settings) -> str | None:
    import sqlite3

    from llmsim.chaos.rules import FaultConfigError, fault_config
    from llmsim.store import prepare_store
    from llmsim.timing.profiles import ProfileError, load_catalog

    if found := relay_problem(settings):
        return found
    try:
        load_catalog(settings.profiles_dir)  # naming the bad file and field
    except ProfileError as exc:
        return str(exc)
    if settings.backend == "mlx":
        from llmsim.backends.mlx.models import check as check_models

        if found := check_models(settings.models, settings.allow_download):
            return found
    try:
        fault_config(settings)  # a bad fault file or rule
    except FaultConfigError as exc:
        return str(exc)
    if settings.scenario_file:
        from llmsim.chaos import scenarios

        try:
            scenarios.load(settings.scenario_file)
        except scenarios.ScenarioError as exc:
            return str(exc)
    try:
        prepare_store(settings.store)  # and the workers find the schema made
    except (ValueError, sqlite3.Error) as exc:
        return f"--store: {exc}"
    return None


def relay_problem(settings: Settings) -> str | None:
    """What stops proxy or replay from starting."""
    if settings.backend == "proxy" and not settings.upstream:
        return "--backend proxy needs --upstream URL"
    if settings.record_dir and settings.backend not in ("proxy", "replay"):
        return "--record works with --backend proxy (or replay with --on-miss proxy)"
    if problem := missing_key(settings):
        return problem
    if settings.backend == "replay":
        if settings.cassettes_dir is None:
            return "--backend replay needs --cassettes DIR"
        if settings.on_miss == "proxy" and not settings.upstream:
            return "--on-miss proxy needs --upstream URL"
        if not settings.cassettes_dir.is_dir() and settings.on_miss != "proxy":
            return f"--cassettes: {settings.cassettes_dir} is not a directory"
        from llmsim.backends.cassette import load as load_cassettes

        try:
            load_cassettes(settings.cassettes_dir) if settings.cassettes_dir.is_dir() else None
        except (ValueError, KeyError, OSError) as exc:
            return f"--cassettes: {exc}"
    return None
