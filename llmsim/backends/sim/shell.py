"""Shell- and exec-like tools get what a careful model sends them: one harmless, read-only command that fits
the request (`ls`, `pwd`, `git status`, `cat README.md`), never one that writes or deletes, and only the
arguments the tool requires besides the command (a made-up working directory or timeout would break it).
A tool that runs JavaScript or Python rather than a shell (Codex's `exec`, a `run_python`) gets a program in
that language that does the same read and prints it."""

from __future__ import annotations

import json
import re
from typing import Any

_SHELL_NAME = re.compile(r"(?:^|[_\-.])(?:shell|bash|sh|exec|exec_command|terminal|run_command|command|cmd|"
                         r"run_shell|execute|local_shell|container\.exec)(?:$|[_\-.])", re.IGNORECASE)
_SHELL_WORDS = re.compile(r"\b(?:shell|terminal|bash|command line|run (?:a )?commands?|execute (?:a )?commands?)\b",
                          re.IGNORECASE)
COMMAND_KEYS = ("command", "cmd", "commands", "script", "input", "code")
# (request words, command): the first whose words the request uses; all of them only read.
COMMANDS = (
    (re.compile(r"\btests?\b|\bpytest\b|\bspecs?\b", re.I), "git ls-files"),
    (re.compile(r"\bgit\b|\bstatus\b|\bchanges?\b|\bmodified\b|\bbranch", re.I), "git status"),
    (re.compile(r"\blog\b|\bhistory\b|\bcommits?\b|\brecent\b", re.I), "git log --oneline -5"),
    (re.compile(r"\bwhere am i\b|\bcurrent (?:directory|folder)\b|\bpwd\b|\bworking directory\b", re.I), "pwd"),
    (re.compile(r"\bfiles?\b|\blist\b|\bdirector(?:y|ies)\b|\bfolders?\b|\bcontents?\b", re.I), "ls -la"),
    (re.compile(r"\breadme\b|\bproject\b|\babout\b|\bdescribe\b|\bsummar|\bwhat (?:does|is) this\b", re.I),
     "cat README.md"),
)
DEFAULT_COMMAND = "ls"
_RUN = re.compile(r"\b(?:run|execute|check|test|build|lint)\b|\bwith (?:bash|the shell|a command)\b", re.I)
_JAVASCRIPT = re.compile(r"\bjavascript\b|\bnode(?:\.js)?\b|\bjs\b|\bV8\b|\bdeno\b|\btypescript\b", re.I)
_PYTHON = re.compile(r"\bpython\b|\bipython\b|\bjupyter\b", re.I)
_CAT = re.compile(r"cat (?:[\w./-]+|'[^']*')(?: (?:[\w./-]+|'[^']*'))*")


def is_shell(tool: dict[str, Any]) -> bool:
    name, description = str(tool.get("name") or ""), str(tool.get("description") or "")
    return tool.get("type") in ("shell", "local_shell") or bool(_SHELL_NAME.search(name)) or \
        bool(_SHELL_WORDS.search(description[:500]) and _command_key(tool.get("parameters") or {}))


def fits(request: str) -> bool:
    """Whether a request is about the workspace a shell can look at (its files, project, git state)."""
    return any(words.search(request[:2000]) for words, _ in COMMANDS)


def asks_to_run(request: str) -> bool:
    """Whether the request asks for something run ("run the tests", "check it with bash")."""
    return bool(_RUN.search(request[:2000]))


def reads_only(command: str) -> bool:
    """Whether `command` is one this module sends: every one of them only reads."""
    return command in {c for _, c in COMMANDS} | {DEFAULT_COMMAND} or bool(_CAT.fullmatch(command))


def language(tool: dict[str, Any]) -> str:
    """The language the tool runs, from its description or grammar: `javascript`, `python` or `shell`."""
    fmt = tool.get("format") or {}
    text = f"{tool.get('name') or ''} {str(tool.get('description') or '')[:300]} {fmt.get('definition') or ''}"
    if _JAVASCRIPT.search(text):
        return "javascript"
    if _PYTHON.search(text) and not re.search(r"\b(?:bash|shell)\b", text, re.I):
        return "python"
    return "shell"


def program(language: str, command: str, description: str = "") -> str:
    """`command` as a program in `language` that runs it (or does its read) and prints what it found."""
    if language == "javascript":
        if "exec_command" in description:  # Codex's exec: nested tools on `tools`, output through text()
            return f"const result = await tools.exec_command({{ cmd: {json.dumps(command)} }});\ntext(result.output);"
        out = "text" if re.search(r"\btext\(", description) else "console.log"
        return f"{out}({json.dumps('Ready to run: ' + command)});"
    if language == "python":
        if command.startswith("cat "):
            names = [n.strip("'") for n in command[4:].split()]
            return "\n".join(f"print(open({json.dumps(n)}).read())" for n in names)
        return "import os\n\nprint('\\n'.join(sorted(os.listdir('.'))))"
    return command


def command(request: str) -> str:
    """The read-only command that fits the request best."""
    for words, chosen in COMMANDS:
        if words.search(request[:2000]):
            return chosen
    return DEFAULT_COMMAND


def arguments(parameters: dict[str, Any] | None, request: str) -> dict[str, Any] | None:
    """The call's arguments for the command that fits the request (see `call_arguments`)."""
    return call_arguments(parameters, command(request))


def call_arguments(parameters: dict[str, Any] | None, chosen: str, lang: str = "shell", description: str = ""
                   ) -> dict[str, Any] | None:
    """The call's arguments: the command (or a program in the tool's language) under the key the schema names
    (an argv array where it asks for one), plus defaults for any other required property; None when the schema
    has no command-like key."""
    schema = parameters or {}
    key = _command_key(schema)
    if key is None:
        return None
    prop = (schema.get("properties") or {}).get(key) or {}
    command_line = chosen
    if lang != "shell":
        chosen = program(lang, chosen, description)
    out: dict[str, Any] = {key: ["bash", "-lc", chosen] if prop.get("type") == "array" else chosen}
    for name in schema.get("required") or []:
        if name in ("description", "justification", "reason", "summary"):  # what the call does, in words
            out[name] = f"Run `{command_line}`, which only reads"
        elif name not in out:
            out[name] = _default((schema.get("properties") or {}).get(name) or {})
    return out


def _command_key(schema: dict[str, Any]) -> str | None:
    properties = schema.get("properties") or {}
    return next((k for k in COMMAND_KEYS if k in properties), None)


def _default(prop: dict[str, Any]) -> Any:
    if "default" in prop:
        return prop["default"]
    if "enum" in prop and prop["enum"]:
        return prop["enum"][0]
    kind = prop.get("type")
    kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind
    return {"integer": 10000, "number": 10000, "boolean": False, "array": [], "object": {}}.get(str(kind), ".")
