"""A coding agent's turn on the plain simulator, planned in-process (tools.Planner over hand-built prompts, each
call's result fed back as the agent would): tools classified by what they do, reads before anything else, a
read-only command in each tool's language, literal edits in each agent's format, and, for any tool set and any
request, no write tool called unless the request names the file and its content. One test drives a real server
for `namespace` on the output item."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from typing import Any

import pytest
from faker import Faker
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats_kit import prompt, respond
from llmsim.backends.sim import edits, larkgen, shell, toolkind
from llmsim.backends.sim.tools import Call, Planner, Say
from llmsim.generation import Turn
from llmsim.pytest_plugin import LLMSim


def function(name: str, what: str = "", **properties: dict[str, Any]) -> dict[str, Any]:
    required = [key for key in properties if not properties[key].pop("optional", False)]
    return {"type": "function", "name": name, "description": what,
            "parameters": {"type": "object", "properties": properties, "required": required}}


STRING: dict[str, Any] = {"type": "string"}
PATCH_GRAMMAR = 'start: "*** Begin Patch" LF hunk+ "*** End Patch" LF?\nhunk: /[^\\n]*/ LF\nLF: "\\n"\n'
CLAUDE_CODE = [
    function("Read", "Reads a file from the local filesystem.", file_path=dict(STRING),
             offset={"type": "integer", "optional": True}, limit={"type": "integer", "optional": True}),
    function("Edit", "Performs exact string replacements in files.", file_path=dict(STRING),
             old_string=dict(STRING), new_string=dict(STRING), replace_all={"type": "boolean", "optional": True}),
    function("Write", "Writes a file to the local filesystem.", file_path=dict(STRING), content=dict(STRING)),
    function("MultiEdit", "Several edits to one file.", file_path=dict(STRING),
             edits={"type": "array", "items": {"type": "object"}}),
    function("Bash", "Executes a given bash command in a persistent shell session.", command=dict(STRING),
             description={"type": "string", "optional": True}),
    function("Agent", "Launch a new agent to handle complex, multi-step tasks.", prompt=dict(STRING)),
    function("TodoWrite", "Create and manage a structured task list.", todos={"type": "array"}),
    function("NotebookEdit", "Replace a cell in a Jupyter notebook.", notebook_path=dict(STRING)),
    function("WebFetch", "Fetches content from a URL.", url=dict(STRING), prompt=dict(STRING)),
    function("CronCreate", "Schedule a prompt.", cron=dict(STRING), prompt=dict(STRING)),
]
OPENCODE = [
    function("read", "Read a file or directory from the local filesystem.", filePath=dict(STRING)),
    function("edit", "Performs exact string replacements in files.", filePath=dict(STRING),
             oldString=dict(STRING), newString=dict(STRING)),
    function("write", "Writes a file to the local filesystem.", content=dict(STRING), filePath=dict(STRING)),
    function("bash", "Executes a given bash command.", command=dict(STRING), description=dict(STRING)),
    function("glob", "Fast file pattern matching tool.", pattern=dict(STRING)),
    function("grep", "Fast content search tool.", pattern=dict(STRING)),
    function("task", "Launch a new agent.", description=dict(STRING), prompt=dict(STRING),
             subagent_type=dict(STRING)),
    function("todowrite", "Create and maintain a structured task list.", todos={"type": "array"}),
]
CODEX = [
    function("exec_command", "Runs a command in a PTY, returning output.", cmd=dict(STRING),
             workdir={"type": "string", "optional": True}),
    function("write_stdin", "Writes characters to an existing unified exec session.", session_id={"type": "integer"}),
    function("view_image", "View a local image file from the filesystem.", path=dict(STRING)),
    {"type": "custom", "name": "apply_patch", "description": "Use the `apply_patch` tool to edit files.",
     "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR}},
    {**function("spawn_agent", "Spawn a sub-agent.", message=dict(STRING)), "namespace": "multi_agent_v1"},
]
DOMAIN = [
    function("get_weather", "The weather in a city.", city=dict(STRING)),
    function("delete_user", "Delete a user account.", user_id=dict(STRING)),
    function("send_email", "Send an email.", to=dict(STRING), body=dict(STRING)),
    function("remove_file", "Remove a file.", path=dict(STRING)),
    function("move_file", "Move or rename a file.", path=dict(STRING), destination=dict(STRING)),
    function("create_invoice", "Create an invoice.", amount={"type": "number"}),
]
CODEX_DEFAULT = [{"type": "custom", "name": "exec", "namespace": "functions",
                  "description": "Run JavaScript code to orchestrate/compose tool calls. Nested tools: "
                                 "`await tools.exec_command({cmd})`, `await tools.apply_patch(input)`; text(value).",
                  "format": {"type": "grammar", "syntax": "lark",
                             "definition": "start: SOURCE\nSOURCE: /[\\s\\S]+/\n"}},
                 function("wait", "Wait for a running exec cell.", cell_id=dict(STRING))]
CATALOGUE = CLAUDE_CODE + OPENCODE + CODEX + DOMAIN + CODEX_DEFAULT
CALC = "def add(a, b):\n    return a + b\n"
SYSTEM = "You are a coding agent.\nWorking directory: /work/demo\n"


def output_for(call: Call) -> str:
    """What the agent's tool would return: a file read, a command's output, an edit's confirmation."""
    arguments = json.loads(call.text) if call.kind == "function_call" else {}
    if any(k in arguments for k in ("file_path", "filePath")) and call.name.lower() == "read":
        return "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(CALC.splitlines(), 1))
    if str(arguments.get("cmd") or arguments.get("command") or "").startswith("cat ") or "cat calc.py" in call.text:
        return CALC
    return "ok"


def run(tools: list[dict[str, Any]], request: str, rounds: int = 8, seed: int = 0, tool_choice: str = "auto",
        echo: dict[str, Any] | None = None) -> tuple[list[Call], str | None]:
    """The calls an agent loop makes against the planner, and its final answer text; `echo`: arguments the
    client adds to each call it sends back (Claude Code's `replace_all: false`)."""
    turns = [Turn("system", SYSTEM), Turn("user", request)]
    calls: list[Call] = []
    fake = Faker()
    for round_ in range(rounds):
        fake.seed_instance(seed + round_)
        p = prompt("", *turns, tools=tools, tool_choice=tool_choice)
        steps = Planner(p, random.Random(seed + round_), fake).plan()
        made = [s for s in steps if isinstance(s, Call)]
        if not made:
            said = [s for s in steps if isinstance(s, Say)]
            return calls, said[-1].text if said else None
        for call in made:
            calls.append(call)
            if call.kind == "function_call":
                sent = json.dumps({**(echo or {}), **json.loads(call.text)})
                turns += [Turn("assistant", sent, "function_call", call.name, call.call_id),
                          Turn("tool", output_for(call), "function_call_output", call_id=call.call_id)]
            else:
                turns += [Turn("assistant", json.dumps({"type": "custom_tool_call", "name": call.name,
                                                        "input": call.text, "call_id": call.call_id}),
                               "custom_tool_call"),
                          Turn("assistant", json.dumps({"type": "custom_tool_call_output", "call_id": call.call_id,
                                                        "output": output_for(call)}), "custom_tool_call_output")]
    return calls, None


def by_name(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(t for t in tools if t["name"] == name)


def command_of(call: Call) -> str:
    if call.kind == "custom_tool_call":
        found = re.search(r"cmd: (\"(?:[^\"\\]|\\.)*\")", call.text)
        return json.loads(found.group(1)) if found else call.text
    arguments = json.loads(call.text)
    value = next(arguments[k] for k in shell.COMMAND_KEYS if k in arguments)
    return value[-1] if isinstance(value, list) else value


@pytest.mark.parametrize(("tool", "kind"), [
    *((t, k) for t, k in zip(CLAUDE_CODE, ["read", "write", "write", "write", "execute", "meta", "meta", "write",
                                           "read", "write"], strict=True)),
    *((t, k) for t, k in zip(OPENCODE, ["read", "write", "write", "execute", "read", "read", "meta", "meta"],
                             strict=True)),
    *((t, k) for t, k in zip(CODEX, ["execute", "write", "read", "write", "meta"], strict=True)),
    *((t, k) for t, k in zip(DOMAIN, ["read", "write", "meta", "write", "write", "write"], strict=True)),
], ids=lambda v: v["name"] if isinstance(v, dict) else v)
def test_tools_are_classified_by_what_they_do(tool: dict[str, Any], kind: str) -> None:
    assert toolkind.kind(tool) == kind


@pytest.mark.parametrize("tools", [CLAUDE_CODE, OPENCODE], ids=["claude-code", "opencode"])
def test_a_read_and_test_task_reads_then_runs_a_read_only_command_then_answers(tools: list[dict[str, Any]]) -> None:
    calls, answer = run(tools, "Read calc.py, then run the tests with bash")
    assert [toolkind.kind(by_name(tools, c.name)) for c in calls] == ["read", "execute"]
    path_key = "file_path" if tools is CLAUDE_CODE else "filePath"
    assert json.loads(calls[0].text) == {path_key: "/work/demo/calc.py"}  # the named file, nothing invented
    described = {"description": "Run `git ls-files`, which only reads"} if tools is OPENCODE else {}
    assert json.loads(calls[1].text) == {"command": "git ls-files", **described}  # only the required arguments
    assert answer is not None and "return a + b" in answer and "{" not in answer  # prose from the results


def test_reads_go_together_and_nothing_runs_beside_them() -> None:
    p = prompt(SYSTEM, "Compare calc.py and util.py, then check git status", tools=CLAUDE_CODE)
    first = [s for s in Planner(p, random.Random(0), Faker()).plan() if isinstance(s, Call)]
    assert [c.name for c in first] == ["Read", "Read"]  # parallel only among read-only tools
    single = prompt(SYSTEM, "Compare calc.py and util.py", tools=CLAUDE_CODE, parallel_tool_calls=False)
    assert len([s for s in Planner(single, random.Random(0), Faker()).plan() if isinstance(s, Call)]) == 1


def test_codex_without_a_read_tool_reads_through_its_shell() -> None:
    calls, answer = run(CODEX, "Read calc.py, then run the tests")
    assert [(c.name, command_of(c)) for c in calls] == [("exec_command", "cat calc.py"),
                                                        ("exec_command", "git ls-files")]
    assert answer is not None and "return a + b" in answer


@pytest.mark.parametrize("request_text", ["add the line # done to calc.py", "Add the line `# done` to calc.py."])
def test_an_append_reads_then_edits_through_the_agents_own_tool(request_text: str) -> None:
    calls, answer = run(CLAUDE_CODE, request_text)
    assert [c.name for c in calls] == ["Read", "Edit"]
    assert json.loads(calls[1].text) == {"file_path": "/work/demo/calc.py", "old_string": "    return a + b",
                                         "new_string": "    return a + b\n# done"}
    calls, _ = run(OPENCODE, request_text)
    assert [c.name for c in calls] == ["read", "edit"]
    assert json.loads(calls[1].text)["newString"] == "    return a + b\n# done"


def test_an_edit_echoed_back_with_defaults_added_is_not_made_again() -> None:
    calls, answer = run(CLAUDE_CODE, "add the line # done to calc.py", echo={"replace_all": False})
    assert [c.name for c in calls] == ["Read", "Edit"] and answer is not None  # once: it was applied 200 times


def test_a_new_file_is_written_whole_without_a_read() -> None:
    calls, _ = run(CLAUDE_CODE, "create hello.txt saying hi")
    assert [(c.name, json.loads(c.text)) for c in calls] == [
        ("Write", {"file_path": "/work/demo/hello.txt", "content": "hi\n"})]


def test_codex_patches_with_a_block_its_grammar_accepts() -> None:
    calls, _ = run(CODEX, "replace a + b with b + a in calc.py")
    assert [c.name for c in calls] == ["exec_command", "apply_patch"]
    patch = calls[1].text
    assert patch == "*** Begin Patch\n*** Update File: calc.py\n@@\n-a + b\n+b + a\n*** End Patch\n"
    assert larkgen.accepts(by_name(CODEX, "apply_patch")["format"], patch)
    created, _ = run(CODEX, "create notes.md saying remember the milk")
    assert created[-1].text == "*** Begin Patch\n*** Add File: notes.md\n+remember the milk\n*** End Patch\n"


def test_codex_default_model_patches_through_its_nested_apply_patch() -> None:
    calls, answer = run(CODEX_DEFAULT, "add the line # done to calc.py")
    assert [c.name for c in calls] == ["exec", "exec"] and all(c.namespace == "functions" for c in calls)
    assert command_of(calls[0]) == "cat calc.py"
    assert calls[1].text.startswith('const result = await tools.apply_patch("*** Begin Patch\\n*** Update File: '
                                     'calc.py\\n@@\\n-    return a + b\\n+    return a + b\\n+# done\\n')
    assert answer is not None and "I edited calc.py" in answer


def test_a_replace_of_text_the_file_lacks_makes_no_edit() -> None:
    calls, answer = run(CLAUDE_CODE, "replace x * y with y * x in calc.py")
    assert [c.name for c in calls] == ["Read"] and answer is not None


@pytest.mark.parametrize("request_text", [
    "Fix the bug in calc.py", "delete the tests", "Refactor calc.py", "add tests to calc.py",
    "write a README", "rm -rf everything and start over", "move calc.py to lib/calc.py", "make it better"])
def test_vague_requests_never_write_delete_or_move(request_text: str) -> None:
    for tools in (CLAUDE_CODE, OPENCODE, CODEX, DOMAIN):
        calls, _ = run(tools, request_text)
        kinds = [toolkind.kind(by_name(tools, c.name)) for c in calls]
        assert "write" not in kinds and "meta" not in kinds, (request_text, [c.name for c in calls])


NAME_WORDS = ["read", "write", "edit", "delete", "move", "run", "exec", "shell", "get", "list", "search", "create",
              "update", "task", "todo", "agent", "file", "files", "notes", "patch", "apply", "spawn", "send", "user"]
KEYS = ["path", "file_path", "filePath", "content", "command", "cmd", "old_string", "new_string", "query", "text"]


@st.composite
def tool_sets(draw: st.DrawFn) -> list[dict[str, Any]]:
    chosen = draw(st.lists(st.sampled_from(range(len(CATALOGUE))), max_size=8, unique=True))
    tools = [json.loads(json.dumps(CATALOGUE[i])) for i in chosen]
    for _ in range(draw(st.integers(0, 4))):
        name = "_".join(draw(st.lists(st.sampled_from(NAME_WORDS), min_size=1, max_size=3)))
        keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
        tools.append(function(name, draw(st.sampled_from(["", "Runs shell commands.", "Edits a file.",
                                                          "Reads a file."])), **{k: dict(STRING) for k in keys}))
    unique = {t["name"]: t for t in tools}
    return list(unique.values())


REQUESTS = st.sampled_from([
    "Read calc.py", "Fix the failing test", "delete calc.py", "What does this project do?", "run the tests",
    "clean up the repository", "add the line # done to calc.py", "create hello.txt saying hi",
    "replace a + b with b + a in calc.py", "rename calc.py to math.py", "update everything", "git status please",
    "What's the weather in Paris?", "send an email to bob", "overwrite calc.py", "remove the build folder",
]) | st.text(max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tools=tool_sets(), request_text=REQUESTS, seed=st.integers(0, 2**16),
       choice=st.sampled_from(["auto", "required"]))
def test_no_write_tool_is_called_unless_the_request_names_the_file_and_its_content(
        tools: list[dict[str, Any]], request_text: str, seed: int, choice: str) -> None:
    calls, _ = run(tools, request_text, rounds=5, seed=seed, tool_choice=choice)
    edit = edits.requested(request_text)
    for call in calls:
        tool = by_name(tools, call.name)
        kind = toolkind.kind(tool)
        if kind == "write":
            assert edit is not None, (request_text, str(call))
            assert edit.path in call.text and (edit.text in call.text or edit.action == "append"), str(call)
        if kind == "execute" and "tools.apply_patch(" in call.text:  # Codex's nested edit tool
            assert edit is not None and f"File: {edit.path}" in call.text, (request_text, str(call))
        elif kind == "execute":
            assert shell.reads_only(command_of(call)), str(call)


def test_the_programs_each_language_gets_run_and_only_read(tmp_path: Any) -> None:
    (tmp_path / "calc.py").write_text(CALC)
    python = shell.program("python", "cat calc.py")
    assert subprocess.run([sys.executable, "-c", python], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout == CALC + "\n"
    listing = subprocess.run([sys.executable, "-c", shell.program("python", "ls")], cwd=tmp_path,
                             capture_output=True, text=True, check=True).stdout
    assert listing == "calc.py\n"
    javascript = shell.program("javascript", "ls", "Runs JavaScript in Node.")
    assert subprocess.run(["node", "-e", javascript], capture_output=True, text=True, check=True).stdout
    assert subprocess.run(["bash", "-c", shell.program("shell", "ls")], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout == "calc.py\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calc.py"]  # nothing written
    assert shell.language({"name": "exec", "description": "Run JavaScript code in a V8 isolate"}) == "javascript"
    assert shell.language({"name": "run_python", "description": "Execute Python code."}) == "python"
    assert shell.language({"name": "bash", "description": "Executes a bash command."}) == "shell"


@pytest.mark.parametrize("grammar", [
    PATCH_GRAMMAR,
    '?start: expr\n?expr: term (("+"|"-") term)*\n?term: NUMBER | "(" expr ")"\n%import common.NUMBER\n',
    'start: greeting " " NAME "!"\ngreeting: "hello"i | "hi"\nNAME: /[A-Z][a-z]{2,8}/\n',
    'start: item~2..3\nitem: "[" DIGIT "]"\n%import common.DIGIT\n',
])
def test_a_lark_grammar_is_respected(grammar: str) -> None:
    for seed in range(20):
        text = larkgen.generate(grammar, random.Random(seed))
        assert text is not None and larkgen.accepts({"type": "grammar", "syntax": "lark", "definition": grammar}, text)
    assert larkgen.generate("start: ", random.Random(0)) in ("", None)
    assert larkgen.to_regex("this is not lark") is None


def test_a_custom_lark_tool_gets_input_its_grammar_accepts() -> None:
    grammar = 'start: "T-" DIGIT~4\n%import common.DIGIT\n'
    tool = {"type": "custom", "name": "ticket", "description": "Look up a ticket.",
            "format": {"type": "grammar", "syntax": "lark", "definition": grammar}}
    p = prompt("", "Look up the ticket", tools=[tool])
    [call] = [s for s in Planner(p, random.Random(0), Faker()).plan() if isinstance(s, Call)]
    assert re.fullmatch(r"T-\d{4}", call.text)


AIDER_DIFF = ("Act as an expert software developer.\nDescribe each change with a *SEARCH/REPLACE block* per the "
              "examples below.\nIf the file contains code or other data wrapped/escaped in json/xml/quotes or other "
              "containers, you need to propose edits to the literal contents of the file.")
AIDER_FILES = f"I have *added these files to the chat* so you can go ahead and edit them.\n\ncalc.py\n```\n{CALC}```\n"


def test_aider_gets_its_own_format_and_never_json() -> None:
    block = respond(prompt(AIDER_DIFF, AIDER_FILES, "Ok.", "add the line # done to calc.py"))
    assert block is not None and "calc.py\n```\n<<<<<<< SEARCH\n    return a + b\n=======\n    return a + b\n" \
        "# done\n>>>>>>> REPLACE\n```" in block
    prose = respond(prompt(AIDER_DIFF, AIDER_FILES, "Ok.", "What does calc.py do?"))
    assert prose is not None and "<<<<<<<" not in prose and "```" not in prose and not prose.startswith("{")
    commit = respond(prompt("Generate a one-line Git commit message for those changes.",
                            "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1,2 @@\n+# done"))
    assert commit == "chore: update calc.py"


@pytest.mark.parametrize(("request_text", "edit"), [
    ("create hello.txt saying hi", edits.Edit("create", "hello.txt", "hi")),
    ('Create a file named notes/todo.md containing "buy milk"', edits.Edit("create", "notes/todo.md", "buy milk")),
    ("add the line X = 1 to config.py", edits.Edit("append", "config.py", "X = 1")),
    ("replace 'foo' with 'bar' in app.js", edits.Edit("replace", "app.js", "bar", "foo")),
    ("Fix the bug in calc.py", None), ("add tests to calc.py", None), ("create a web app", None),
])
def test_only_literal_edits_are_edits(request_text: str, edit: edits.Edit | None) -> None:
    assert edits.requested(request_text) == edit


def test_a_namespaced_call_carries_its_namespace(llmsim: LLMSim) -> None:
    tools = [{"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.",
              "tools": [function("close_agent", "Close an agent.", target=dict(STRING))]}]
    llmsim.load_scenario({"turns": [{"tool_calls": [{"name": "close_agent", "arguments": {"target": "a1"}}]}]})
    response = llmsim.openai_client().responses.create(model="gpt-5", input="Close a1.", tools=tools)  # type: ignore
    [call] = [item for item in response.output if item.type == "function_call"]
    assert (call.name, call.namespace) == ("close_agent", "multi_agent_v1")
    with llmsim.openai_client().responses.stream(model="gpt-5", input="Close a1.", tools=tools) as stream:  # type: ignore
        final = stream.get_final_response()
    assert [item.namespace for item in final.output if item.type == "function_call"] in ([], ["multi_agent_v1"])


def test_json_is_claimed_only_when_the_prompt_asks_for_it() -> None:
    mentions_json = "If the file holds data escaped in json/xml/quotes, edit the literal contents."
    assert not (respond(prompt(mentions_json, "What is a closure?")) or "").lstrip().startswith("{")
    asked = respond(prompt("", 'Is this spam? Respond in JSON with the keys "is_spam", "rating" and "tags".'))
    value = json.loads(asked or "")
    assert isinstance(value["is_spam"], bool) and isinstance(value["rating"], int) and isinstance(value["tags"], list)


def test_a_schema_in_the_prompt_types_optional_and_enum_keys() -> None:
    schema = {"type": "object", "required": ["rating", "ok", "tone"], "properties": {
        "rating": {"anyOf": [{"type": "integer"}, {"type": "null"}]}, "ok": {"type": "boolean"},
        "tone": {"type": "string", "enum": ["dry", "silly"]}}}
    for seed in range(10):
        value = json.loads(respond(prompt(f"Respond with a JSON object matching this schema: {json.dumps(schema)}",
                                          "Rate this silly joke."), seed) or "")
        assert isinstance(value["rating"], int) and isinstance(value["ok"], bool) and value["tone"] == "silly"


@pytest.mark.parametrize(("request_text", "expected"), [
    ("what is the weather in sf", {"city": "sf"}),
    ("Weather in New York tomorrow?", {"city": "New York"}),
    ("forecast for 3 days in Paris on 2026-03-04", {"city": "Paris", "days": 3, "date": "2026-03-04"}),
    ("show me the first 20 lines of notes/todo.md", {"path": "notes/todo.md", "lines": 20}),
])
def test_arguments_come_from_the_request(request_text: str, expected: dict[str, Any]) -> None:
    tool = function("get_things", "Get the weather forecast, or show lines of a file.",
                    **{key: {"type": "integer"} if isinstance(value, int) else
                       {"type": "string", "format": "date"} if key == "date" else dict(STRING)
                       for key, value in expected.items()})
    p = prompt("", request_text, tools=[tool], tool_choice="required")
    [call] = [s for s in Planner(p, random.Random(0), Faker()).plan() if isinstance(s, Call)]
    assert json.loads(call.text) == expected
