"""What the simulator does with tools: follow tool_choice, call what the input asks for, answer from outputs.

`plan` turns a Prompt into Steps (client-run calls, built-in items, the answer message);
the sim backend turns Steps into Deltas. A tool is "asked for" when the last user message
shares words with its name (counted double) or description; `call_rate` adds random calls
under tool_choice auto, for agents that must cope with unprompted calls.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llmsim.backends.sim import hosted, intent, jsongen, shell
from llmsim.generation import WEB_SEARCH_TYPES, Prompt, Turn, pending

if TYPE_CHECKING:
    from faker import Faker  # a type here; Faker itself is imported at its first use (llmsim/backends/sim/fake.py)

THRESHOLD = 2  # one name word, or two description words
STOPWORDS = frozenset(
    "the and for with that this from what whats which who how are was were you your our can could would should "
    "please tell give get set use using make about into any all some have has had will shall just then than "
    "them they their there here when where why its it's not but also more most very much many one two".split()
)
HOSTED_WORDS = {
    "web_search": "search web internet online latest news today current recent browse lookup",
    "file_search": "file files document documents docs pdf knowledge uploaded manual",
    "code_interpreter": "calculate compute code python run execute plot chart analyze analyse math sum",
    "image_generation": "image picture draw drawing illustration logo photo paint sketch render",
}
CLIENT_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
MAX_CALLS = 12  # client-run calls per conversation: past this a careful model answers with what it has
FINAL_TOOL = re.compile(r"^(?:final_answer|final|finish|answer|respond|submit(?:_answer)?|done|complete)$", re.I)


@dataclass
class Call:
    """A call the client runs; the response ends after the calls."""

    kind: str  # function_call | custom_tool_call
    name: str
    text: str
    call_id: str


@dataclass
class Hosted:
    result: hosted.HostedResult


@dataclass
class Say:
    """The answer message: `text` None means simulated prose (or JSON when a text format asks)."""

    text: str | None = None
    annotations: list[dict[str, Any]] = field(default_factory=list)
    hints: dict[str, str] = field(default_factory=dict)  # string values for simulated JSON, by property name
    summary: bool = False  # `text` sums up tool results: a format the prompt asks for (formats/) still wins


Step = Call | Hosted | Say


def _words(text: str) -> set[str]:
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower()
    return {w for w in re.findall(r"[a-z0-9]+", text) if len(w) >= 3 and w not in STOPWORDS}


_OBSERVATION = re.compile(r"^\s*Observation:\s*", re.IGNORECASE)
_TASK = re.compile(r"^\s*(?:New task|Task|Question):\s*", re.IGNORECASE)


def asked(turns: list[Turn]) -> tuple[str, list[str]]:
    """The question, and tool results the client sent back as text: agents without native tool results
    (smolagents) write "Observation: …" user messages after the task, and the task is still the question."""
    observed: list[str] = []
    for turn in reversed(turns):
        if turn.role != "user" or turn.kind != "message":
            continue
        if _OBSERVATION.match(turn.text):
            if not observed or len(observed) < 8:
                observed.insert(0, _OBSERVATION.sub("", turn.text, count=1).strip())
            continue
        return _TASK.sub("", turn.text, count=1), observed
    return "", observed


def question_hints(question: str) -> dict[str, str]:
    """String values a model would take from the question: the question itself, and the place it names."""
    text = question.strip()
    hints = dict.fromkeys(("query", "q", "question", "prompt"), text) if text else {}
    places = re.findall(r"\b(?:in|at|for|from|to|near) ((?:[A-Z][\w'-]+)(?: [A-Z][\w'-]+)*)", text[:2000])
    if places:
        hints.update(dict.fromkeys(("city", "location", "place", "town"), places[0]))
    return hints


def words(text: str) -> set[str]:
    """The content words tool matching compares (for the recognisers of `formats/`)."""
    return _words(text)


def fit(query: set[str], name: str, description: str) -> int:
    """How well a tool named `name` and described so fits a request's words (name words count double)."""
    return 2 * _hits(query, _words(name)) + _hits(query, _words(description) - _words(name))


def _similar(a: str, b: str) -> bool:
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def _score(query: set[str], tool: dict[str, Any]) -> int:
    kind = tool["type"]
    if kind in ("function", "custom"):
        name, description = tool.get("name", ""), tool.get("description") or ""
    elif kind == "mcp":
        name = tool.get("server_label", "")
        description = " ".join([tool.get("server_description") or "", *hosted.mcp_tool_names(tool)])
    else:  # a built-in tool: its vocabulary counts like a name
        name, description = HOSTED_WORDS.get("web_search" if kind in WEB_SEARCH_TYPES else kind, ""), ""
    return 2 * _hits(query, _words(name)) + _hits(query, _words(description) - _words(name))


def _hits(query: set[str], words: set[str]) -> int:
    return sum(any(_similar(q, w) for q in query) for w in words)


def _refers(ref: dict[str, Any], tool: dict[str, Any]) -> bool:
    """Whether a tool_choice / allowed_tools entry names `tool`."""
    kind = ref.get("type")
    if kind in ("function", "custom"):
        return tool["type"] == kind and tool.get("name") == ref.get("name")
    if kind == "mcp":
        return tool["type"] == "mcp" and tool.get("server_label") == ref.get("server_label")
    if kind in WEB_SEARCH_TYPES:
        return tool["type"] in WEB_SEARCH_TYPES
    return tool["type"] == kind


def _joined(answers: list[hosted.Cited]) -> Say:
    """One message from several tools' answers, their annotations shifted to the joined text."""
    text, annotations = "", []
    for answer in answers:
        offset = len(text) + (1 if text else 0)
        text = f"{text} {answer.text}" if text else answer.text
        for note in answer.annotations:
            annotations.append({k: v + offset if k in ("start_index", "end_index", "index") else v
                                for k, v in note.items()})
    return Say(text, annotations)


class Planner:
    def __init__(self, prompt: Prompt, rng: random.Random, fake: Faker, call_rate: float = 0.0) -> None:
        self.prompt = prompt
        self.rng = rng
        self.fake = fake
        self.call_rate = call_rate
        self.question, self.observed = asked(prompt.turns)

    def plan(self) -> list[Step]:
        prompt = self.prompt
        script = prompt.script
        if script and (script.text is not None or script.tool_calls):
            steps: list[Step] = [self._scripted_call(c.name, c.arguments) for c in script.tool_calls]
            return steps if steps and script.text is None else [*steps, Say(script.text)]
        steps = self._mcp_list()
        waiting = pending(prompt.turns)
        approvals = [json.loads(t.text) for t in waiting if t.kind == "mcp_approval_response"]
        if approvals:
            return steps + self._approved(approvals)
        outputs = [t for t in waiting if t.kind in CLIENT_OUTPUTS]
        chosen = self._choose(answered=bool(outputs or self.observed))
        if chosen:
            return steps + self._calls(chosen)
        if (outputs or self.observed) and prompt.text_format.get("type", "text") == "text":
            return steps + [Say(self._from_outputs(outputs), summary=True)]
        return steps + [Say(hints=self._hints(outputs))]  # prose, or JSON (as text.format asks) using the outputs

    # --- choosing -----------------------------------------------------------------------------

    def _choose(self, answered: bool) -> list[dict[str, Any]]:
        prompt, choice = self.prompt, self.prompt.tool_choice
        if choice == "none" or not prompt.tools:
            return []
        mode, pool = "auto", prompt.tools
        if isinstance(choice, dict):
            if choice.get("type") != "allowed_tools":
                return [t for t in prompt.tools if _refers(choice, t)][:1]
            mode = choice.get("mode", "auto")
            pool = [t for t in prompt.tools if any(_refers(ref, t) for ref in choice.get("tools", []))]
        elif choice == "required":
            mode = "required"
        made = [t for t in prompt.turns if t.kind in ("function_call", "custom_tool_call")]
        if mode == "auto" and (answered or len(made) >= MAX_CALLS):
            return []
        if mode == "required" and (answered or len(made) >= MAX_CALLS):
            final = [t for t in pool if FINAL_TOOL.match(str(t.get("name") or ""))]
            if final:  # an agent that ends its loop with a final-answer tool (smolagents' ToolCallingAgent)
                return final[:1]
        shells = [t for t in pool if t.get("type") in ("function", "custom") and shell.is_shell(t)]
        if shells and shell.fits(self.question):  # a coding agent's request about its workspace: look first
            return shells[:1]
        query = _words(self.question)
        ranked = sorted(((s, -i, t) for i, t in enumerate(pool) if (s := _score(query, t)) >= THRESHOLD),
                        key=lambda x: (x[0], x[1]), reverse=True)
        picked = [t for _, _, t in ranked]
        if not picked and pool and (mode == "required" or (self.call_rate and self.rng.random() < self.call_rate)):
            picked = [self.rng.choice(pool)]
        if not prompt.parallel_tool_calls:
            picked = picked[:1]
        return picked[:prompt.max_tool_calls] if prompt.max_tool_calls else picked

    # --- acting -------------------------------------------------------------------------------

    def _calls(self, chosen: list[dict[str, Any]]) -> list[Step]:
        prompt, rng, fake = self.prompt, self.rng, self.fake
        query = self.question or fake.sentence()
        steps: list[Step] = []
        answers: list[hosted.Cited] = []
        made = {(t.name, t.text) for t in prompt.turns if t.kind in ("function_call", "custom_tool_call")}
        for tool in chosen:
            kind = tool["type"]
            if kind in ("function", "custom"):
                text = self._arguments(tool) if kind == "function" else self._custom_input(tool)
                if (tool["name"], text) in made:  # never the same call twice: what it returned is known
                    continue
                made.add((tool["name"], text))
                steps.append(Call(f"{kind}_tool_call" if kind == "custom" else "function_call", tool["name"], text,
                                  self._call_id()))
                continue
            if kind in WEB_SEARCH_TYPES:
                result = hosted.web_search(query, prompt.include, rng, fake)
            elif kind == "file_search":
                result = hosted.file_search(tool, query, prompt.include, rng, fake)
            elif kind == "code_interpreter":
                result = hosted.code_interpreter(tool, prompt.include, rng)
            elif kind == "image_generation":
                result = hosted.image_generation(tool, query, rng)
            elif kind == "mcp":
                name = self._mcp_pick(tool, query)
                arguments = json.dumps(jsongen.generate(hosted.MCP_INPUT_SCHEMA, rng, fake))
                result = hosted.mcp_approval_request(tool, name, arguments) if hosted.needs_approval(tool, name) \
                    else hosted.mcp_call(tool, name, arguments, fake)
            else:  # computer use, shells, patches: client-side tools the simulator does not drive
                continue
            steps.append(Hosted(result))
            if result.answer is not None:
                answers.append(result.answer)
        if not steps:
            outputs = [t for t in pending(prompt.turns) if t.kind in CLIENT_OUTPUTS]
            plain = prompt.text_format.get("type", "text") == "text"
            return [Say(self._from_outputs(outputs), summary=True)] if (outputs or self.observed) and plain \
                else [Say(hints=self._hints(outputs))]
        if len(answers) < len(steps):
            return steps  # a client-run call or an approval request: the client acts next, no answer yet
        return steps + [_joined(answers)]

    def _scripted_call(self, name: str, arguments: str) -> Call:
        custom = any(t["type"] == "custom" and t.get("name") == name for t in self.prompt.tools)
        return Call("custom_tool_call" if custom else "function_call", name, arguments, self._call_id())

    def _call_id(self) -> str:
        return "call_" + hosted.token(self.rng, 24)

    def _arguments(self, tool: dict[str, Any]) -> str:
        parameters = tool.get("parameters")
        request = self.question
        if shell.is_shell(tool):
            arguments = shell.arguments(parameters, request)
            if arguments is not None:
                return json.dumps(arguments)
        schema = parameters or {"type": "object", "properties": {}}
        hints = self._hints()
        if FINAL_TOOL.match(str(tool.get("name") or "")):
            outputs = [t for t in self.prompt.turns if t.kind in CLIENT_OUTPUTS]
            hints = {**dict.fromkeys(("answer", "final_answer", "result", "response", "text", "output"),
                                     self._from_outputs(outputs) if outputs or self.observed else self._sentence()),
                     **hints}
        return json.dumps(jsongen.generate(schema, self.rng, self.fake, hints), ensure_ascii=False)

    def _hints(self, outputs: Sequence[Turn] = ()) -> dict[str, str]:
        """String values a model would reuse: the place the question names, the question itself, and the
        string fields of JSON tool outputs."""
        hints = question_hints(self.question)
        for turn in outputs:
            try:
                data = json.loads(turn.text)
            except ValueError:
                continue
            if isinstance(data, dict):
                hints.update({k.lower(): v for k, v in data.items() if isinstance(v, str)})
        return hints

    def _custom_input(self, tool: dict[str, Any]) -> str:
        fmt = tool.get("format") or {}
        matching = None
        if shell.is_shell(tool):
            return shell.command(self.question)
        if fmt.get("type") == "grammar" and fmt.get("syntax") == "regex":
            matching = jsongen.from_regex(str(fmt.get("definition", "")), self.rng)
        return matching if matching is not None else self.fake.sentence(nb_words=self.rng.randint(4, 10))

    def _from_outputs(self, outputs: list[Turn]) -> str:
        """An answer that quotes what the tools returned, so an agent test can see the round trip."""
        names = {t.call_id: t.name for t in self.prompt.turns if t.kind == "function_call"}
        parts = []
        for turn in outputs:
            if turn.kind == "function_call_output":
                name, text = names.get(turn.call_id) or "the tool", turn.text
            else:
                item = json.loads(turn.text)
                name, text = "the tool", item.get("output") if isinstance(item.get("output"), str) else turn.text
            parts.append(f"{name} returned {text[:400]}")
        parts.extend(f"the tool returned {' '.join(text.split())[:400]}" for text in self.observed[-3:])
        return f"Here is what I found: {'; '.join(parts)}. {self._sentence()}"

    def _sentence(self) -> str:
        """A closing sentence that names what the question was about (never filler words)."""
        topics = intent.key_nouns(self.question)
        if not topics:
            return "Let me know if you need anything else."
        subject = " and ".join(topics[:2])
        return self.rng.choice((f"That should answer your question about {subject}.",
                                f"Those are the current details on {subject}.",
                                f"Let me know if you want more detail on {subject}."))

    # --- MCP ----------------------------------------------------------------------------------

    def _mcp_list(self) -> list[Step]:
        """Servers whose tools are not listed in the conversation yet get an mcp_list_tools item first."""
        listed = {json.loads(t.text).get("server_label") for t in self.prompt.turns if t.kind == "mcp_list_tools"}
        if self.prompt.tool_choice == "none":
            return []
        return [Hosted(hosted.HostedResult(hosted.mcp_list_tools(tool, self.fake))) for tool in self.prompt.tools
                if tool["type"] == "mcp" and tool.get("server_label") not in listed]

    def _mcp_pick(self, tool: dict[str, Any], query: str) -> str:
        names = hosted.mcp_tool_names(tool)
        words = _words(query)
        return max(names, key=lambda n: sum(any(_similar(q, w) for q in words) for w in _words(n)))

    def _approved(self, approvals: list[dict[str, Any]]) -> list[Step]:
        requests = {json.loads(t.text).get("id"): json.loads(t.text) for t in self.prompt.turns
                    if t.kind == "mcp_approval_request"}
        servers = {t.get("server_label"): t for t in self.prompt.tools if t["type"] == "mcp"}
        steps: list[Step] = []
        texts: list[str] = []
        for approval in approvals:
            request = requests.get(approval.get("approval_request_id"))
            if request is None:
                continue
            if not approval.get("approve"):
                texts.append(f"I did not call {request['name']} on {request['server_label']}, as you declined.")
                continue
            tool = servers.get(request["server_label"], {"server_label": request["server_label"]})
            result = hosted.mcp_call(tool, request["name"], request["arguments"], self.fake, request.get("id"))
            steps.append(Hosted(result))
            texts.append(result.answer.text if result.answer else "")
        return steps + [Say(" ".join(texts) if texts else None)]
