"""What the simulator does with tools: follow tool_choice, call what the input asks for, answer from outputs.

`plan` turns a Prompt into Steps (client-run calls, built-in items, the answer message);
the sim backend turns Steps into Deltas. A tool is "asked for" when the last user message
shares words with its name (counted double) or description; `call_rate` adds random calls
under tool_choice auto, for agents that must cope with unprompted calls.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llmsim.backends.sim import agent, edits, hosted, intent, jsongen, larkgen, mentions, shell, toolkind
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
    namespace: str | None = None  # the namespace a tool was offered in (Codex's `multi_agent_v1`)


@dataclass
class Hosted:
    result: hosted.HostedResult


@dataclass
class Say:
    """The answer message: `text` None means simulated prose (or JSON when a text format asks)."""

    text: str | None = None
    annotations: list[dict[str, Any]] = field(default_factory=list)
    hints: Mapping[str, str] = field(default_factory=dict)  # string values for simulated JSON, by property name
    summary: bool = False  # `text` sums up tool results: a format the prompt asks for (formats/) still wins


Step = Call | Hosted | Say


class Lazy(Mapping[str, str]):
    """A mapping made by `make` when first read: the answer's hints cost a scan of the question (places, dates,
    paths, numbers) that only JSON and the recognisers' arguments use."""

    def __init__(self, make: Callable[[], dict[str, str]]) -> None:
        self._make: Callable[[], dict[str, str]] | None = make
        self._made: dict[str, str] = {}

    def _all(self) -> dict[str, str]:
        if self._make is not None:
            self._made, self._make = self._make(), None
        return self._made

    def __getitem__(self, key: str) -> str:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


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
    """String values a model would take from the question: the question itself, and what it names (a place, a
    date, numbers, a file path: mentions.py)."""
    text = question.strip()
    hints = dict.fromkeys(("query", "q", "question", "prompt"), text) if text else {}
    hints.update(mentions.hints(text))
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


def _harmless(tool: dict[str, Any]) -> bool:
    """A tool the model may pick unprompted: no writer, and a runner only when it takes the command it gets (one
    that only reads); a meta tool stays (a handoff the user asks for)."""
    if tool["type"] not in ("function", "custom"):
        return True  # a built-in tool: the simulator plays it (a client-side shell gets no call from it)
    kind = toolkind.kind(tool)
    if kind == "execute":
        return tool["type"] == "custom" or shell.call_arguments(tool.get("parameters"), "ls") is not None
    return kind != "write"


def _loads(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _output_text(output: Any) -> str:
    """A tool output's text: a string, or the texts of its content parts."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(str(p.get("text", "")) for p in output if isinstance(p, dict) and p.get("text"))
    return json.dumps(output)


def _readable(text: str) -> str:
    """A result as a model would quote it: a shell's preamble dropped (Codex's `Output:`), JSON read out as
    `key: value` pairs, whitespace folded, 400 characters at most."""
    if "\nOutput:\n" in text[:2000]:
        text = text.split("\nOutput:\n", 1)[1]
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        inner = next((value[k] for k in ("output", "stdout", "content", "text", "result")
                      if isinstance(value.get(k), str)), None)
        text = inner if inner is not None else ", ".join(f"{k}: {json.dumps(v, ensure_ascii=False).strip(chr(34))}"
                                                         for k, v in list(value.items())[:12])
    elif isinstance(value, list):
        text = ", ".join(json.dumps(v, ensure_ascii=False).strip('"') for v in value[:12])
    flat = " ".join(text.split())
    return flat if len(flat) <= 400 else flat[:400].rsplit(" ", 1)[0] + "…"


def _described(name: str | None, arguments: str, output: str) -> str:
    """One result in words: what was read or run, and what came back."""
    args = _loads(arguments) if arguments.startswith("{") else {}
    quoted = _readable(output) or "nothing"
    path = next((args[k] for k in agent.PATH_KEYS if isinstance(args.get(k), str)), None)
    command = next((args[k] for k in shell.COMMAND_KEYS if isinstance(args.get(k), str)), None)
    if name and path and toolkind.kind({"type": "function", "name": name}) == "read":
        return f"{os.path.basename(path)} holds {_readable(edits.file_text(output)) or 'nothing'}"
    patched = re.search(r"\*\*\* (?:Update|Add) File: (\S+)", arguments)
    if name and (patched or path) and toolkind.kind({"type": "function", "name": name}) == "write" or \
            patched and "tools.apply_patch(" in arguments:
        target = os.path.basename(patched.group(1) if patched else str(path))
        return f"I edited {target} as you asked, and {name} answered {quoted}"
    if command:
        return f"running `{command}` printed {quoted}"
    if name and not args and arguments and toolkind.kind({"type": "custom", "name": name}) == "execute":
        ran = re.search(r"cmd: (\"(?:[^\"\\]|\\.)*\")", arguments)  # a program that runs a command (shell.program)
        return f"running `{json.loads(ran.group(1))}` printed {quoted}" if ran else f"{name} printed {quoted}"
    return f"{name or 'the tool'} returned {quoted}"


def _instructions(turns: list[Turn]) -> str:
    """The system text and the client's context messages, where an agent says its working directory."""
    return "\n".join(t.text[:20_000] for t in turns if t.kind == "message" and t.role in ("system", "user"))[-200_000:]


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
        if self._workspace():
            planned = agent.plan(self._pool(), self.question, prompt.turns, _instructions(prompt.turns),
                                 prompt.parallel_tool_calls)
            if planned:
                return steps + [self._planned(p) for p in planned[:prompt.max_tool_calls or None]]
            if self.prompt.tool_choice != "required" or outputs or self.observed:
                outputs = [t for t in prompt.turns if t.kind in CLIENT_OUTPUTS][-8:] if outputs else outputs
                if (outputs or self.observed) and prompt.text_format.get("type", "text") == "text":
                    return steps + [Say(self._from_outputs(outputs), summary=True)]
                return steps + [Say(hints=self._hints(outputs))]
        chosen = self._choose(answered=bool(outputs or self.observed))
        if chosen:
            return steps + self._calls(chosen)
        if (outputs or self.observed) and prompt.text_format.get("type", "text") == "text":
            return steps + [Say(self._from_outputs(outputs), summary=True)]
        return steps + [Say(hints=self._hints(outputs))]  # prose, or JSON (as text.format asks) using the outputs

    # --- choosing -----------------------------------------------------------------------------

    def _pool(self) -> list[dict[str, Any]]:
        """The tools tool_choice lets the model pick from unprompted."""
        choice = self.prompt.tool_choice
        if choice == "none":
            return []
        if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
            return [t for t in self.prompt.tools if any(_refers(ref, t) for ref in choice.get("tools", []))]
        return self.prompt.tools

    def _workspace(self) -> bool:
        """A coding agent's turn (agent.py plans it): tools that act on a workspace, no specific tool forced."""
        choice = self.prompt.tool_choice
        return not (isinstance(choice, dict) and choice.get("type") != "allowed_tools") and \
            agent.workspace(self._pool())

    def _planned(self, planned: agent.Planned) -> Call:
        tool = planned.tool
        kind = "custom_tool_call" if tool["type"] == "custom" else "function_call"
        return Call(kind, tool["name"], planned.text, self._call_id(), tool.get("namespace"))

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
        shells = [t for t in pool if t.get("type") in ("function", "custom") and toolkind.kind(t) == "execute"
                  and _harmless(t)]
        if shells and shell.fits(self.question):  # a coding agent's request about its workspace: look first
            return shells[:1]
        query = _words(self.question)
        safe = [t for t in pool if _harmless(t)]
        ranked = sorted(((s, -i, t) for i, t in enumerate(safe) if (s := _score(query, t)) >= THRESHOLD),
                        key=lambda x: (x[0], x[1]), reverse=True)
        picked = [t for _, _, t in ranked]
        if not picked and safe and (mode == "required" or (self.call_rate and self.rng.random() < self.call_rate)):
            picked = [self.rng.choice(safe)]
        if not prompt.parallel_tool_calls or any(toolkind.kind(t) != "read" for t in picked[1:]) or \
                (picked and toolkind.kind(picked[0]) != "read"):
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
                                  self._call_id(), tool.get("namespace")))
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
        tool = next((t for t in self.prompt.tools if t.get("name") == name and t["type"] in ("function", "custom")),
                    {})
        return Call("custom_tool_call" if tool.get("type") == "custom" else "function_call", name, arguments,
                    self._call_id(), tool.get("namespace"))

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

    def _hints(self, outputs: Sequence[Turn] = ()) -> Mapping[str, str]:
        """String values a model would reuse: the place the question names, the question itself, and the
        string fields of JSON tool outputs; found when first read (prose never reads them)."""
        return Lazy(lambda: self._found_hints(outputs))

    def _found_hints(self, outputs: Sequence[Turn]) -> dict[str, str]:
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
        if shell.is_shell(tool):  # in the tool's own language: Codex's `exec` runs JavaScript
            return shell.program(shell.language(tool), shell.command(self.question), str(tool.get("description") or ""))
        if fmt.get("type") == "grammar" and fmt.get("syntax") == "regex":
            matching = jsongen.from_regex(str(fmt.get("definition", "")), self.rng)
        elif fmt.get("type") == "grammar" and fmt.get("syntax") == "lark":
            matching = larkgen.generate(str(fmt.get("definition", "")), self.rng)
        return matching if matching is not None else self.fake.sentence(nb_words=self.rng.randint(4, 10))

    def _from_outputs(self, outputs: list[Turn]) -> str:
        """An answer that quotes what the tools returned, in prose (a JSON result read out, never pasted), so an
        agent test can see the round trip."""
        calls = {t.call_id: (t.name, t.text) for t in self.prompt.turns if t.kind == "function_call"}
        for turn in self.prompt.turns:
            if turn.kind == "custom_tool_call":
                item = _loads(turn.text)
                calls[item.get("call_id")] = (item.get("name"), str(item.get("input") or ""))
        parts = []
        for turn in outputs:
            if turn.kind == "function_call_output":
                call_id, text = turn.call_id, turn.text
            else:
                item = _loads(turn.text)
                call_id, text = item.get("call_id"), _output_text(item.get("output", turn.text))
            name, arguments = calls.get(call_id) or (None, "")
            parts.append(_described(name, arguments, text).rstrip(". "))
        parts.extend(f"the tool returned {' '.join(text.split())[:400]}" for text in self.observed[-3:])
        return f"Here is what I found: {'; '.join(parts)}. {self._sentence()}"

    def _sentence(self) -> str:
        """A closing sentence that names what the question was about (never filler words)."""
        topics = tuple(edits.paths(self.question)) or intent.key_nouns(self.question)  # the files, when it names them
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
