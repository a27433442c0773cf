"""What an offered tool does, read from its name, description and schema: `read` (looks, changes nothing),
`write` (changes files), `execute` (runs commands or code), `meta` (steers the agent itself: sub-agents, todo
lists, plans, schedules) or `other` (a domain tool: `get_weather`, `book_flight`). A careful model calls read
tools freely, execute tools only with a command that reads, write tools only for an edit the user spelled out,
and meta tools never on its own."""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Literal

from llmsim.backends.sim import shell

Kind = Literal["read", "write", "execute", "meta", "other"]

# Name words, tried in this order: one that steers the agent, then one that writes, whatever else its name holds.
_WRITE = frozenset("write writes edit edits multiedit patch apply_patch str_replace replace create delete remove rm "
                   "move mv rename insert update append overwrite save put upload notebookedit mkdir touch "
                   "cron destroy drop".split())
_META = frozenset("task tasks todo todos todowrite plan spawn agent agents subagent skill workflow schedule wakeup "
                  "worktree goal memory followup interrupt".split())
_READ = frozenset("read view cat grep glob ls list search find fetch get lookup query show describe inspect "
                  "status open look check count stat head tail diff webfetch websearch".split())
_MESSAGE = frozenset("send message notify email post reply ask input request".split())
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def words(name: str) -> list[str]:
    """`NotebookEdit` → ['notebook', 'edit'], `apply_patch` → ['apply', 'patch'], plus the name itself."""
    lower = name.lower()
    return [lower, *(w.lower() for w in _WORD.findall(name))]


def kind(tool: dict[str, Any]) -> Kind:
    """The kind of a function, custom or built-in tool (memoised on its name, type and description)."""
    return _kind(str(tool.get("type") or ""), str(tool.get("name") or ""),
                 str(tool.get("description") or "")[:300], _keys(tool))


def _keys(tool: dict[str, Any]) -> str:
    properties = (tool.get("parameters") or {}).get("properties") if isinstance(tool.get("parameters"), dict) else None
    return json.dumps(sorted(properties)) if isinstance(properties, dict) else ""


@functools.lru_cache(maxsize=1024)
def _kind(type_: str, name: str, description: str, keys: str) -> Kind:
    if type_ == "apply_patch":
        return "write"
    if type_ in ("shell", "local_shell", "computer_use_preview", "computer", "code_interpreter"):
        return "execute"
    if type_ not in ("function", "custom"):
        return "read"  # web and file search, MCP listings: the hosted tools look things up
    named = set(words(name))
    if named & _META:  # before the writers: a todo list's `TodoWrite` writes no file
        return "meta"
    if named & _WRITE:
        return "write"
    if shell.is_shell({"type": type_, "name": name, "description": description,
                       "parameters": {"properties": dict.fromkeys(json.loads(keys) if keys else [])}}):
        return "execute"
    if named & _READ:
        return "read"
    if named & _MESSAGE:
        return "meta"
    first = description.lstrip("- ").split(" ", 1)[0].lower().rstrip("s")
    if first in {"write", "edit", "create", "delete", "remove", "move", "rename", "modify", "update", "replace"}:
        return "write"
    if first in {"read", "list", "search", "find", "fetch", "get", "return", "look", "show", "retrieve"}:
        return "read"
    return "other"
