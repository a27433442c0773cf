"""What the coding-agent tests share: a temporary git repository to work in, and the trajectory an agent ran, read
from the server's request log (the calls each request sent back as history, on any surface), with each call's
kind as the simulator classifies the tool (llmsim/backends/sim/toolkind.py)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsim.backends.sim import shell, toolkind
from llmsim.responses.toolspec import offered

CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def repo(folder: Path) -> Path:
    """A git repository with one commit: calc.py and its test."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "calc.py").write_text(CALC)
    (folder / "test_calc.py").write_text(TEST_CALC)
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "init")
    return folder


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args], cwd=folder,
                          check=True, capture_output=True, text=True)
    return done.stdout


@dataclass(frozen=True)
class Step:
    name: str
    arguments: Any  # the parsed arguments, or a custom tool's input text
    kind: str  # read | write | execute | meta | other
    namespace: str | None = None

    def command(self) -> str | None:
        """The shell command the call ran (a program's nested `cmd` for a JavaScript exec)."""
        if isinstance(self.arguments, dict):
            value = next((self.arguments[k] for k in shell.COMMAND_KEYS if k in self.arguments), None)
            return value[-1] if isinstance(value, list) and value else value if isinstance(value, str) else None
        if isinstance(self.arguments, str):
            if "exec_command" in self.arguments:
                start = self.arguments.index("cmd: ") + 5
                return str(json.JSONDecoder().raw_decode(self.arguments, start)[0])
            return self.arguments
        return None

    def __str__(self) -> str:
        shown = self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)
        return f"{self.namespace + '.' if self.namespace else ''}{self.name}({shown})"


def trajectory(requests: list[dict[str, Any]]) -> list[Step]:
    """The calls of the longest conversation in the log, in order (the last request of a turn holds them all)."""
    best: list[Step] = []
    for body in requests:
        steps = _calls(body)
        if len(steps) > len(best):
            best = steps
    return best


def read_only(step: Step) -> bool:
    """A call that changes nothing: a read tool, or an execute tool running a command that only reads."""
    if step.kind == "read":
        return True
    command = step.command()
    return step.kind == "execute" and command is not None and shell.reads_only(command)


def _tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    tools = [t.get("function", t) | {"type": t.get("type", "function")} if "function" in t else t
             for t in body.get("tools") or [] if isinstance(t, dict)]
    if "input" in body and isinstance(body["input"], list):
        tools = offered(tools, [i for i in body["input"] if isinstance(i, dict)])
    return {str(t.get("name")): ({**t, "type": "function"} if "input_schema" in t else t) for t in tools}


def _step(tools: dict[str, dict[str, Any]], name: str, arguments: Any, namespace: str | None = None) -> Step:
    tool = tools.get(name, {"type": "function", "name": name})
    return Step(name, arguments, toolkind.kind(tool), namespace)


def _calls(body: dict[str, Any]) -> list[Step]:
    tools = _tools(body)
    steps: list[Step] = []
    for item in body.get("input") or []:  # Responses
        if isinstance(item, dict) and item.get("type") == "function_call":
            steps.append(_step(tools, item["name"], json.loads(item["arguments"] or "{}"), item.get("namespace")))
        elif isinstance(item, dict) and item.get("type") == "custom_tool_call":
            steps.append(_step(tools, item["name"], item["input"], item.get("namespace")))
    for message in body.get("messages") or []:
        for call in message.get("tool_calls") or []:  # Chat Completions
            function = call.get("function") or {}
            steps.append(_step(tools, function.get("name", ""), json.loads(function.get("arguments") or "{}")))
        content = message.get("content")
        for block in content if isinstance(content, list) else []:  # Messages
            if isinstance(block, dict) and block.get("type") == "tool_use":
                steps.append(_step(tools, block["name"], block.get("input")))
    return steps
