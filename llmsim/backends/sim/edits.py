"""The only file edits a careful model makes unasked-for nothing: the literal ones a request spells out, file and
text ("create hello.txt saying hi", "add the line X to FILE", "replace A with B in FILE"). Each is written in
the agent's own edit format: Claude Code's `Edit`/`Write`/`MultiEdit`, opencode's `edit`/`write`, Codex's
`apply_patch`, aider's SEARCH/REPLACE, whole-file and udiff blocks; the text comes from the request, the file's
current lines from what the agent already read."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Literal

MAX_SCAN_CHARS = 2000
MAX_FILE_CHARS = 200_000  # of a file's text read back from a tool result
_PATH = r"[`\"']?(?P<path>/?(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z]\w{0,9})\b[`\"']?"
_TEXT = r"(?P<text>`[^`\n]+`|\"[^\"\n]+\"|'[^'\n]+'|[^\n]+?)"
_CREATE = re.compile(r"\b(?:create|make|write|add)\s+(?:a\s+)?(?:new\s+)?(?:file\s+)?(?:called\s+|named\s+)?" + _PATH +
                     r"\s+(?:saying|containing|that says|with(?: the)?(?: contents?| text)?)\s*:?\s*" + _TEXT +
                     r"\s*[.!]?\s*$", re.IGNORECASE | re.MULTILINE)
_APPEND = re.compile(r"\badd\s+(?:the\s+|a\s+|this\s+)?(?:line|text)\s*:?\s*" + _TEXT +
                     r"\s+(?:to|at the end of)\s+(?:the\s+)?(?:end of\s+)?(?:the\s+)?(?:file\s+)?" + _PATH +
                     r"\s*[.!]?\s*$", re.IGNORECASE | re.MULTILINE)
_REPLACE = re.compile(r"\breplace\s+" + _TEXT.replace("text", "old") + r"\s+with\s+" + _TEXT.replace("text", "new") +
                      r"\s+in\s+(?:the\s+)?(?:file\s+)?" + _PATH + r"\s*[.!]?\s*$", re.IGNORECASE | re.MULTILINE)
_CWD = re.compile(r"(?:[Ww]orking directory|<cwd>|cwd)\s*[:=>]?\s*(/[^\s<>\"'`]+)")
_NUMBERED = re.compile(r"^\s*\d+(?:\t|\| ?|: |→)")


@dataclass(frozen=True)
class Edit:
    """One literal edit: `text` is the new file's content (create), the line to add (append) or the new text
    (replace, of `old`)."""

    action: Literal["create", "append", "replace"]
    path: str
    text: str
    old: str = ""


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "`\"'":
        return text[1:-1]
    return text


def requested(request: str) -> Edit | None:
    """The literal edit the request spells out, or None: anything vaguer is not an edit a careful model makes."""
    text = _unquote(request.strip()[:MAX_SCAN_CHARS])  # opencode's `run` sends the message quoted
    if match := _REPLACE.search(text):
        old, new = _unquote(match.group("old")), _unquote(match.group("new"))
        return Edit("replace", _unquote(match.group("path")), new, old) if old and old != new else None
    if match := _APPEND.search(text):
        return Edit("append", _unquote(match.group("path")), _unquote(match.group("text")))
    if match := _CREATE.search(text):
        return Edit("create", _unquote(match.group("path")), _unquote(match.group("text")))
    return None


def paths(request: str) -> list[str]:
    """The file paths a request names ("Read calc.py", "look at `src/app.ts`"), in order, at most four."""
    found = [_unquote(m.group("path")) for m in re.finditer(r"(?<![\w/.@:-])" + _PATH + r"(?![\w/-])",
                                                              request[:MAX_SCAN_CHARS])]
    return [p for p in dict.fromkeys(found) if not re.fullmatch(r"e\.g|i\.e", p)][:4]


def cwd(instructions: str) -> str | None:
    """The agent's working directory, as its system prompt or environment context says it."""
    match = _CWD.search(instructions)
    return match.group(1).rstrip(".,;:") if match else None


def absolute(path: str, directory: str | None) -> str:
    return path if os.path.isabs(path) or directory is None else os.path.join(directory, path)


def file_text(output: str) -> str:
    """A file's text as a read tool returned it: line-number prefixes (Claude Code's `     1\\t`, opencode's
    `00001| `), wrappers (`<file>`, `<content>`) and a shell's preamble (Codex's `Output:`) taken off."""
    text = output[:MAX_FILE_CHARS]
    if "\nOutput:\n" in text:
        text = text.split("\nOutput:\n", 1)[1]
    lines = [line for line in text.split("\n")
             if not re.fullmatch(r"\s*</?(?:file|content|path|type)>.*|\s*\(End of file.*\)\s*|<system-reminder>.*",
                                 line)]
    numbered = [line for line in lines if line.strip()]
    if numbered and all(_NUMBERED.match(line) for line in numbered):
        lines = [_NUMBERED.sub("", line, count=1) if line.strip() else line for line in lines]
    return "\n".join(lines).strip("\n") + "\n"


def applied(edit: Edit, current: str | None) -> str | None:
    """The file's text after the edit, or None when it cannot apply (the text to replace is not there)."""
    if edit.action == "create":
        return edit.text + "\n"
    body = current or ""
    if edit.action == "append":
        return (body if not body or body.endswith("\n") else body + "\n") + edit.text + "\n"
    return body.replace(edit.old, edit.text, 1) if edit.old in body else None


def anchor(edit: Edit, current: str | None) -> tuple[str, str] | None:
    """(old, new) for a string-replacing edit tool: the replaced text, or for an append the file's last line and
    that line followed by the new one."""
    if edit.action == "replace":
        return (edit.old, edit.text) if current is None or edit.old in current else None
    lines = [line for line in (current or "").split("\n") if line.strip()]
    if not lines:
        return None
    return lines[-1], f"{lines[-1]}\n{edit.text}"


def tool_arguments(tool: dict[str, Any], edit: Edit, current: str | None, directory: str | None
                   ) -> dict[str, Any] | str | None:
    """The call that makes `edit` through `tool` (its schema says how), or None when the tool cannot make it."""
    if tool.get("type") == "custom" or tool.get("name") == "apply_patch" and tool.get("type") != "function":
        return patch(edit, current)
    properties = (tool.get("parameters") or {}).get("properties") or {}
    path_key = next((k for k in ("file_path", "filePath", "path", "file", "filename", "target_file")
                     if k in properties), None)
    if path_key is None:
        key = next((k for k in ("input", "patch", "diff") if k in properties), None)
        return {key: patch(edit, current)} if key and patch(edit, current) else None
    target = absolute(edit.path, directory)
    content_key = next((k for k in ("content", "contents", "file_text", "text") if k in properties), None)
    old_key = next((k for k in ("old_string", "oldString", "old_str", "old", "search") if k in properties), None)
    new_key = next((k for k in ("new_string", "newString", "new_str", "new", "replace") if k in properties), None)
    if "edits" in properties and old_key is None:  # MultiEdit
        pair = anchor(edit, current)
        return {path_key: target, "edits": [{"old_string": pair[0], "new_string": pair[1]}]} if pair else None
    if old_key and new_key:
        pair = anchor(edit, current) if edit.action != "create" else None
        return {path_key: target, old_key: pair[0], new_key: pair[1]} if pair else None
    if content_key:
        after = applied(edit, current)
        return {path_key: target, content_key: after} if after is not None and \
            (edit.action == "create" or current is not None) else None
    return None


def patch(edit: Edit, current: str | None) -> str | None:
    """Codex's apply_patch envelope for the edit."""
    if edit.action == "create":
        return f"*** Begin Patch\n*** Add File: {edit.path}\n+{edit.text}\n*** End Patch\n"
    pair = anchor(edit, current)
    if pair is None:
        return None
    return f"*** Begin Patch\n*** Update File: {edit.path}\n@@\n{_hunk(*pair)}\n*** End Patch\n"


def _hunk(old: str, new: str) -> str:
    """The lines `old` as removed ("-") and `new` as added ("+"): a patch's and a diff's hunk alike."""
    return "\n".join([*(f"-{line}" for line in old.split("\n")), *(f"+{line}" for line in new.split("\n"))])


def search_replace(edit: Edit, current: str | None) -> str | None:
    """aider's SEARCH/REPLACE block (an empty SEARCH creates the file)."""
    if edit.action == "create":
        old, new = "", edit.text
    elif (pair := anchor(edit, current)) is None:
        return None
    else:
        old, new = pair
    search = f"{old}\n" if old else ""
    return f"{edit.path}\n```\n<<<<<<< SEARCH\n{search}=======\n{new}\n>>>>>>> REPLACE\n```"


def whole(edit: Edit, current: str | None) -> str | None:
    """aider's whole-file listing: the path, then the file's new text in a fence."""
    after = applied(edit, current)
    return None if after is None or (edit.action != "create" and current is None) else \
        f"{edit.path}\n```\n{after.rstrip(chr(10))}\n```"


def udiff(edit: Edit, current: str | None) -> str | None:
    """aider's unified diff (a hunk without line numbers, which aider locates by its lines)."""
    if edit.action == "create":
        return f"```diff\n--- /dev/null\n+++ {edit.path}\n@@ @@\n+{edit.text}\n```"
    pair = anchor(edit, current)
    if pair is None:
        return None
    return f"```diff\n--- {edit.path}\n+++ {edit.path}\n@@ @@\n{_hunk(*pair)}\n```"
