"""Code-acting agents (smolagents' CodeAgent): a "Thought:", then code in the delimiters the prompt names that
calls the fitting tool by its signature and prints the result; once an observation is in, code that
passes the answer to `final_answer(...)`."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from llmsim.backends.sim import tools
from llmsim.backends.sim.formats import values
from llmsim.backends.sim.formats.request import Request, observations

_DELIMITERS = re.compile(r"opened with '(?P<open>[^'\n]{1,20})', and closed with '(?P<close>[^'\n]{1,20})'")
LEGACY = ("```py", "```<end_code>")  # smolagents before 1.20
_FUNCTION = re.compile(r"^def (?P<name>\w+)\((?P<params>[^)]{0,2000})\)[^:\n]{0,200}:\n\s+"
                       r"\"\"\"(?P<doc>.{0,4000}?)\"\"\"", re.MULTILINE | re.DOTALL)  # bounded
_PARAM = re.compile(r"(?P<name>\w+)\s*:\s*(?P<type>\w+)")
TYPES = {"string": "string", "str": "string", "integer": "integer", "int": "integer", "number": "number",
         "float": "number", "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
         "object": "object", "dict": "object"}


@dataclass
class Function:
    name: str
    doc: str
    schema: dict[str, Any]


def respond(req: Request) -> str | None:
    if req.text_format != "text" or "final_answer" not in req.instructions:
        return None
    match = _DELIMITERS.search(req.instructions)
    if match:
        opening, closing = match.group("open"), match.group("close")
    elif all(marker in req.instructions for marker in LEGACY):
        opening, closing = LEGACY
    else:
        return None
    functions = [f for f in _functions(req.instructions) if f.name != "final_answer"]
    question = _task(req.first_user)
    seen = observations(req.messages)
    query = tools.words(question)
    fits = [f for f in functions if tools.fit(query, f.name, f.doc) > 0]
    if seen or not fits:  # results are in, or no tool fits: answer (a computed expression as code)
        answer = values.answer(req, question, [("", _result(s)) for s in seen[-2:]])
        computed = values.arithmetic(question) if not seen else None
        body = f"result = {_expression(question)}\nfinal_answer(result)" if computed is not None else \
            f"final_answer({answer!r})"
        thought = "I have the information I need, so I will return the final answer." if seen else \
            "I can answer this directly and return the final answer."
        return f"Thought: {thought}\n{opening}\n{body}\n{closing}"
    function = max(fits, key=lambda f: (tools.fit(query, f.name, f.doc), -fits.index(f)))
    arguments = values.instance(function.schema, req, question)
    call = ", ".join(f"{k}={v!r}" for k, v in arguments.items()) if isinstance(arguments, dict) else ""
    return (f"Thought: I will use the `{function.name}` tool to look this up, then print the result.\n"
            f"{opening}\nresult = {function.name}({call})\nprint(result)\n{closing}")


def _functions(instructions: str) -> list[Function]:
    tail = instructions.split("you only have access to these tools", 1)[-1]
    found = []
    for match in itertools.islice(_FUNCTION.finditer(tail), 64):
        properties = {p.group("name"): {"type": TYPES.get(p.group("type"), "string")}
                      for p in _PARAM.finditer(match.group("params"))}
        found.append(Function(match.group("name"), match.group("doc").split("Args:")[0].strip(),
                              {"type": "object", "properties": properties, "required": list(properties)}))
    return found


def _task(message: str) -> str:
    """The task of smolagents' first user message ("New task:\\n…")."""
    return message.split("New task:", 1)[-1].strip()


def _result(observation: str) -> str:
    """What the code printed: smolagents wraps it in "Execution logs:" and "Last output from code snippet:"."""
    logs = observation.split("Execution logs:", 1)[-1]
    return logs.split("Last output from code snippet:", 1)[0].strip() or observation


def _expression(question: str) -> str:
    match = re.search(r"\d[\d\s.+\-*/()]*[+\-*/][\d\s.+\-*/()]*\d", question)
    return match.group().strip() if match else "None"
