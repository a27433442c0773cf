"""A coding agent's turn, unscripted, as a careful model takes it: it reads before it acts.

When the offered tools touch a workspace (an execute or file-writing tool among them), the turn goes in stages,
each one request: the read-only calls first (all at once, and only read tools run together: the files the request
names, through the agent's read tool, or `cat` through its shell when it has none), then one execute call with a
read-only command when the request asks to run or check something, then the literal edit the request spells out
(`edits.requested`) through the agent's own edit tool, then an answer in prose from the results. Write and meta
tools (sub-agents, todo lists, schedules) are never called otherwise; arguments come from the request, never
invented. Each stage is planned again from the conversation, so a stage whose calls are already in it is done.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from llmsim.backends.sim import edits, larkgen, shell, toolkind
from llmsim.generation import Turn

PATH_KEYS = ("file_path", "filePath", "path", "file", "filename", "target_file", "absolute_path")
MAX_READS = 4
MAX_CALLS = 12  # client-run calls per conversation (as tools.MAX_CALLS): past this, answer with what it has
_IMAGE = re.compile(r"image|screenshot|photo|picture", re.I)


@dataclass(frozen=True)
class Planned:
    tool: dict[str, Any]
    text: str  # the arguments' JSON, or a custom tool's input


def workspace(tools: list[dict[str, Any]]) -> bool:
    """Whether the tools act on a workspace: then this module plans the turn."""
    return any(toolkind.kind(t) in ("execute", "write") and t.get("type") in ("function", "custom") for t in tools)


def plan(tools: list[dict[str, Any]], question: str, turns: list[Turn], instructions: str,
         parallel: bool = True) -> list[Planned]:
    """The calls of the next stage not made yet; [] when the turn should answer now."""
    made = _made(turns)
    outputs = _outputs(turns)
    kinds = {id(t): toolkind.kind(t) for t in tools}
    readers = [t for t in tools if kinds[id(t)] == "read" and t.get("type") == "function" and _path_key(t)
               and not _IMAGE.search(str(t.get("name") or ""))]  # view_image reads images, not text
    runners = [t for t in tools if kinds[id(t)] == "execute" and (t.get("type") == "custom" or
               shell.call_arguments(t.get("parameters"), "ls") is not None)]  # ones that take a command
    writers = [t for t in tools if kinds[id(t)] == "write" and t.get("type") in ("function", "custom")]
    directory = edits.cwd(instructions)
    edit = edits.requested(question)
    named = edits.paths(question)
    if edit and edit.action == "create":
        named = [p for p in named if p != edit.path]  # a new file: nothing to read first
    stages: list[list[Planned]] = []
    reads = [Planned(readers[0], json.dumps({_path_key(readers[0]): edits.absolute(p, directory)}))
             for p in named[:MAX_READS]] if readers else []
    if not reads and named and runners:
        reads = [_run(runners[0], "cat " + " ".join(_quoted(p) for p in named[:MAX_READS]), instructions)]
    stages.append(reads)
    if runners and (shell.fits(question) or shell.asks_to_run(question) and not edit):
        stages.append([_run(runners[0], shell.command(question), instructions)])
    if edit:
        current = _read_back(edit.path, reads, made, outputs)
        call = _edit_call(writers, edit, current, directory) if writers else _nested_patch(runners, edit, current)
        if call is not None:
            stages.append([call])
    if len(made) >= MAX_CALLS:
        return []
    for stage in stages:
        todo = [p for p in stage if _find(made, p) is None and
                (p.tool.get("type") != "custom" or larkgen.accepts(p.tool.get("format") or {}, p.text))]
        if todo:
            return todo if parallel else todo[:1]
    return []


def _find(made: dict[tuple[str | None, str], str], planned: Planned) -> str | None:
    """The id of the call in the conversation that made `planned`: the same tool, and every argument planned
    there as planned (a client may echo a call back with its defaults added: Claude Code's `replace_all`)."""
    name = planned.tool.get("name")
    exact = made.get((name, _normal(planned.text)))
    if exact is not None:
        return exact
    try:
        wanted = json.loads(planned.text)
    except ValueError:
        return None
    if not isinstance(wanted, dict):
        return None
    for (made_name, text), call_id in made.items():
        if made_name != name:
            continue
        try:
            sent = json.loads(text)
        except ValueError:
            continue
        if isinstance(sent, dict) and all(sent.get(k) == v for k, v in wanted.items()):
            return call_id
    return None


def _edit_call(writers: list[dict[str, Any]], edit: edits.Edit, current: str | None, directory: str | None
               ) -> Planned | None:
    """The edit through the writer that fits it best: a string-replacing tool for an existing file, a whole-file
    tool for a new one, a patch tool for either."""
    def rank(tool: dict[str, Any]) -> int:
        properties = (tool.get("parameters") or {}).get("properties") or {}
        replaces = any(k in properties for k in ("old_string", "oldString", "old_str"))
        whole = any(k in properties for k in ("content", "contents", "file_text"))
        if edit.action == "create":
            return 0 if whole else 1 if not replaces else 2
        return 0 if replaces else 1 if "edits" in properties else 2
    for tool in sorted(writers, key=rank):
        made = edits.tool_arguments(tool, edit, current, directory)
        if made is not None:
            return Planned(tool, made if isinstance(made, str) else json.dumps(made))
    return None


def _nested_patch(runners: list[dict[str, Any]], edit: edits.Edit, current: str | None) -> Planned | None:
    """The edit through an `apply_patch` nested in a JavaScript exec tool (Codex's default model offers it
    only there): the program calls it with the patch and prints what it returned."""
    for tool in runners:
        description = str(tool.get("description") or "")
        if tool.get("type") == "custom" and shell.language(tool) == "javascript" and "apply_patch(" in description:
            patch = edits.patch(edit, current if edit.action == "create" or current is not None else None)
            if patch is not None:
                return Planned(tool, f"const result = await tools.apply_patch({json.dumps(patch)});\n"
                                     "text(typeof result === \"string\" ? result : JSON.stringify(result));")
    return None


def _read_back(path: str, reads: list[Planned], made: dict[tuple[str | None, str], str],
               outputs: dict[str, str]) -> str | None:
    """The text of `path` as a read call of this turn returned it, or None when it is not read yet."""
    for planned in reads:
        call_id = _find(made, planned)
        if call_id is not None and call_id in outputs:
            text = outputs[call_id]
            if text.startswith("Error") or "does not exist" in text[:200] or "not found" in text[:200].lower():
                return None
            return edits.file_text(text)
    return None


def _run(tool: dict[str, Any], command: str, instructions: str) -> Planned:
    """A read-only command in the tool's own language: a shell line, or a program in the JavaScript or Python
    the tool runs."""
    language = shell.language(tool)
    if tool.get("type") == "custom":
        return Planned(tool, shell.program(language, command, str(tool.get("description") or "")))
    arguments = shell.call_arguments(tool.get("parameters"), command, language, str(tool.get("description") or ""))
    return Planned(tool, json.dumps(arguments if arguments is not None else {"command": command}))


def _quoted(path: str) -> str:
    return path if all(c.isalnum() or c in "._/-" for c in path) else "'" + path.replace("'", "'\\''") + "'"


def _path_key(tool: dict[str, Any]) -> str | None:
    properties = (tool.get("parameters") or {}).get("properties") or {}
    required = (tool.get("parameters") or {}).get("required") or []
    key = next((k for k in PATH_KEYS if k in properties), None)
    if key is None or any(r != key for r in required):
        return None  # a read tool whose other required arguments the request does not give
    return key


def _normal(text: str) -> str:
    try:
        return json.dumps(json.loads(text), sort_keys=True)
    except ValueError:
        return text


def _made(turns: list[Turn]) -> dict[tuple[str | None, str], str]:
    """The calls already in the conversation, (name, normalised arguments or input) → call id."""
    made: dict[tuple[str | None, str], str] = {}
    for turn in turns:
        if turn.kind == "function_call":
            made[(turn.name, _normal(turn.text))] = turn.call_id or ""
        elif turn.kind == "custom_tool_call":  # the whole item, as JSON (responses/translate.py)
            try:
                item = json.loads(turn.text)
            except ValueError:
                continue
            if isinstance(item, dict):
                made[(item.get("name"), _normal(str(item.get("input", ""))))] = str(item.get("call_id") or "")
    return made


def _outputs(turns: list[Turn]) -> dict[str, str]:
    out: dict[str, str] = {}
    for turn in turns:
        if turn.kind == "function_call_output" and turn.call_id:
            out[turn.call_id] = turn.text
        elif turn.kind == "custom_tool_call_output":
            try:
                item = json.loads(turn.text)
            except ValueError:
                continue
            if isinstance(item, dict) and item.get("call_id"):
                output = item.get("output")
                out[item["call_id"]] = output if isinstance(output, str) else _joined(output)
    return out


def _joined(parts: Any) -> str:
    if isinstance(parts, list):
        return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
    return json.dumps(parts)
