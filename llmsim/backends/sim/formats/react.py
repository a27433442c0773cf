"""ReAct text as LangChain and llama-index prompt it: "Thought: … Action: tool Action Input: …", and once an
"Observation:" is in the transcript, the final answer ("Final Answer:" for LangChain, "Answer:" for
llama-index). One tool call per step, never the same call twice: an observation means answer now."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from llmsim.backends.sim import tools
from llmsim.backends.sim.formats import values
from llmsim.backends.sim.formats.request import Request, observations

_LANGCHAIN_NAMES = re.compile(r"Action:[^\n]*?one of \[(?P<names>[^\]\n]*)\]")
_LLAMA_NAMES = re.compile(r"Action:[^\n]*?\(one of (?P<names>[^)\n]*)\)")
_LLAMA_TOOL = re.compile(r"> Tool Name: (?P<name>\S+)\nTool Description: (?P<desc>.{0,4000}?)\n"
                         r"Tool Args: (?P<args>\{.{0,8000}?\})\s*$", re.MULTILINE | re.DOTALL)  # bounded
_SIGNATURE = r"^{name}(?:\((?P<params>[^)]*)\))?(?:\s*->\s*\S+)?\s*[-:]\s*(?P<desc>.*)$"
_QUESTION = re.compile(r"^Question:\s*(?P<q>.+)$", re.MULTILINE)


@dataclass
class Tool:
    name: str
    description: str
    schema: dict[str, Any]


def respond(req: Request) -> str | None:
    if req.text_format != "text":
        return None
    template = req.everything
    if "Action Input" not in template or "Thought" not in template:
        return None
    names = _LANGCHAIN_NAMES.search(template) or _LLAMA_NAMES.search(template)
    if not names:
        return None
    final = "Final Answer:" if "Final Answer" in template else "Answer:"
    json_input = bool(re.search(r"Action Input:[^\n]*JSON", template))
    found = _tools(template, [n.strip().strip("`'\"") for n in names.group("names").split(",") if n.strip()])
    transcript = template.rsplit("Begin!", 1)[1] if "Begin!" in template else req.messages
    seen = observations(transcript)
    question = _question(req, transcript)
    completing = transcript.rstrip().endswith("Thought:")  # a completion prompt: the text goes on the last line
    lead = " " if completing else "Thought: "
    if seen or not found:
        results = [("", s) for s in seen[-3:]]
        thought = "I now know the final answer" if final == "Final Answer:" else \
            "I can answer without using any more tools. I'll use the user's language to answer"
        return f"{lead}{thought}\n{final} {values.answer(req, question, results)}"
    query = tools.words(question)
    tool = max(found, key=lambda t: (tools.fit(query, t.name, t.description), -found.index(t)))
    return (f"{lead}I need to use a tool to help me answer the question.\nAction: {tool.name}\n"
            f"Action Input: {_input(req, tool, question, json_input)}")


def _question(req: Request, transcript: str) -> str:
    asked = _QUESTION.findall(transcript)
    if asked:
        return str(asked[-1])
    first = req.first_user
    return first if first else req.user


def _tools(template: str, names: list[str]) -> list[Tool]:
    llama = {m.group("name"): m for m in itertools.islice(_LLAMA_TOOL.finditer(template), 64)}
    found = []
    for name in names[:64]:
        if name in llama:
            try:
                schema = json.loads(llama[name].group("args"))
            except ValueError:
                schema = {}
            found.append(Tool(name, llama[name].group("desc"), schema if isinstance(schema, dict) else {}))
            continue
        line = re.search(_SIGNATURE.format(name=re.escape(name)), template, re.MULTILINE)
        params = [p.split(":")[0].split("=")[0].strip() for p in (line.group("params") or "").split(",")] if line \
            else []
        properties = {p: {"type": "string"} for p in params if p.isidentifier()}
        found.append(Tool(name, line.group("desc") if line else "",
                          {"type": "object", "properties": properties, "required": list(properties)}))
    return found


def _input(req: Request, tool: Tool, question: str, as_json: bool) -> str:
    schema = tool.schema if tool.schema.get("properties") else \
        {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
    hints = {**req.hints, "input": _subject(req, question)}
    arguments = values.instance(schema, Request(req.prompt, req.rng, req.fake, hints), question)
    if as_json or not isinstance(arguments, dict) or len(arguments) != 1:
        return values.dumps(arguments)
    return str(next(iter(arguments.values())))


def _subject(req: Request, question: str) -> str:
    place = req.hints.get("city")
    return place or values.topics(question)[0]
