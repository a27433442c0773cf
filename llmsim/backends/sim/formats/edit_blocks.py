"""aider's edit formats: its SEARCH/REPLACE blocks (`diff`), whole-file listings (`whole`) and unified diffs
(`udiff`), claimed when the system prompt teaches one. A literal edit the request spells out (`edits.requested`)
gets a block that applies to the file as the chat shows it; anything else gets prose with no block and no fence,
which aider takes as "no edit". Its one-line commit-message prompt gets one conventional commit line."""

from __future__ import annotations

import re

from llmsim.backends.sim import edits, intent
from llmsim.backends.sim.formats.request import Request

_FORMATS = (
    ("diff", re.compile(r"\*SEARCH/REPLACE block\*|<<<<<<< SEARCH")),
    ("udiff", re.compile(r"unified diff like `diff -U0`|```diff\n--- ")),
    ("whole", re.compile(r"\*file listing\* format")),
)
_COMMIT = re.compile(r"one-line Git commit messages?", re.IGNORECASE)
_FILE = re.compile(r"^(?P<path>[^\s`]+)\n```[^\n]*\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
_DIFF_PATH = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)
WRITERS = {"diff": edits.search_replace, "whole": edits.whole, "udiff": edits.udiff}


def respond(req: Request) -> str | None:
    if _COMMIT.search(req.instructions[:4000]):
        return _commit_message(req.user)
    style = next((name for name, pattern in _FORMATS if pattern.search(req.instructions)), None)
    if style is None:
        return None
    edit = edits.requested(req.user)
    if edit is None:
        return _no_edit(req)
    current = _chat_file(req.messages, edit.path)
    block = WRITERS[style](edit, current if current is not None or edit.action == "create" else None)
    if block is None:
        return f"I could not find the text to change in {edit.path}, so I made no edit."
    said = {"create": f"This creates {edit.path} with the text you gave.",
            "append": f"This adds the line to the end of {edit.path}.",
            "replace": f"This replaces the text you named in {edit.path}."}[edit.action]
    return f"{said}\n\n{block}\n"


def _chat_file(messages: str, path: str) -> str | None:
    """The file's text as the chat last showed it (aider pastes each added file under its path, fenced)."""
    found = None
    for match in _FILE.finditer(messages):
        if match.group("path") == path:
            found = match.group("body")
    return found


def _no_edit(req: Request) -> str:
    topics = intent.key_nouns(req.user)
    about = f" about {' and '.join(topics[:2])}" if topics else ""
    return (f"I have read your request{about}. I make an edit when you name the file and the exact text, for "
            "example: add the line X to FILE, or replace A with B in FILE.")


def _commit_message(diff: str) -> str:
    paths = list(dict.fromkeys(_DIFF_PATH.findall(diff)))
    target = paths[0] if len(paths) == 1 else f"{len(paths)} files" if paths else "the code"
    created = "--- /dev/null" in diff
    return f"{'feat: add' if created else 'chore: update'} {target}"[:72]
