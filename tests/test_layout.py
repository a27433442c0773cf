"""The code's layout keeps its promises: the parts import one way, and the files the code names exist."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "llmsim"


def _part(module: str) -> str:
    """The unit the layering is about: a subpackage (`llmsim.store`) or a top module (`llmsim.pipeline`)."""
    return ".".join(module.split(".")[:2])


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_only(tree: ast.Module) -> set[int]:
    """The nodes under `if TYPE_CHECKING:`: imports for annotations, never run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for inner in ast.walk(node))
    return skipped


@cache
def _parsed(path: Path) -> tuple[str, ast.Module]:
    """A file's text and syntax tree, read and parsed once for all the tests here (llmsim/ takes ~0.5 s)."""
    source = path.read_text()
    return source, ast.parse(source)


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Which parts each part imports at run time (lazy imports inside functions included)."""
    return {part: set(targets) for part, targets in _walked(tuple(modules.items())).items()}


@cache
def _walked(items: tuple[tuple[str, Path], ...]) -> dict[str, set[str]]:
    """`_imports`, walked once for the tests that ask (a copy of it goes to each)."""
    modules = dict(items)
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = _parsed(path)[1]
        skipped = _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from llmsim import ids` imports the module llmsim.ids, not the package's __init__
                targets = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                           for alias in node.names]
            for target in targets:
                if target.split(".")[0] == "llmsim" and _part(target) != _part(name):
                    edges.setdefault(_part(name), set()).add(_part(target))
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one part (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in edges.get(node, ()):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _path(edges: dict[str, set[str]], start: str, goal: str) -> list[str]:
    """One import path from `start` to `goal`, to name in a failure."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for after in sorted(edges.get(node, ())):
            if after not in paths:
                paths[after] = [*paths[node], after]
                queue.append(after)
    return paths.get(goal, [])


def test_the_parts_import_one_way() -> None:
    edges = _imports(_modules())
    cycles = _cycles(edges)
    described = [" -> ".join(_path(edges, group[0], group[1]) + _path(edges, group[1], group[0])[1:])
                 for group in cycles]
    assert not cycles, "import cycles between parts:\n" + "\n".join(described)


# The layers, top to bottom (docs/layout.md shows the same table): a part imports only parts of its layer or
# below (imports for type annotations aside); within a layer, no cycle (above). A surface's folder (a part with
# a `surface.py`, llmsim/surface.py's contract) is in the surfaces' layer without being named here.
SURFACES_LAYER = "the surfaces"
LAYERS: tuple[tuple[str, frozenset[str]], ...] = tuple((name, frozenset(f"llmsim.{part}" if part else "llmsim"
                                                                        for part in parts)) for name, parts in (
    ("entry points", ("", "__main__", "cli", "preflight", "server", "testing", "pytest_plugin")),
    ("the app factory", ("app",)),
    ("transport", ("api",)),
    ("the road", ("services", "orchestrate", "relaying", "pipeline")),
    ("the registry", ("surfaces",)),
    (SURFACES_LAYER, ()),
    ("backends, metrics", ("backends", "metrics")),
    ("admission", ("chaos",)),
    ("stores", ("store",)),
    ("timing", ("timing",)),
    ("shared machinery", ("shared",)),
    ("foundations", ("surface", "generation", "request", "runtime", "config", "errors", "ids", "rng", "tokens",
                     "wire", "yamlload")),
))


def _is_surface(part: str, modules: dict[str, Path]) -> bool:
    return part != "llmsim" and f"{part}.surface" in modules


def _layer(part: str, modules: dict[str, Path]) -> int:
    if _is_surface(part, modules):
        return [name for name, _ in LAYERS].index(SURFACES_LAYER)
    found = [i for i, (_, parts) in enumerate(LAYERS) if part in parts]
    assert found, f"{part} is in no layer: add it to LAYERS (and docs/layout.md)"
    return found[0]


def test_the_parts_import_down_the_layers() -> None:
    modules = _modules()
    edges = _imports(modules)
    upward = sorted(f"{part} ({LAYERS[_layer(part, modules)][0]}) -> {target} ({LAYERS[_layer(target, modules)][0]})"
                    for part, targets in edges.items() for target in targets
                    if _layer(target, modules) < _layer(part, modules))
    assert not upward, "imports up the layers:\n" + "\n".join(upward)


def test_the_surfaces_import_no_surface_below_them() -> None:
    """The shared parts know a surface only through its contract: none of them imports a surface's folder."""
    modules = _modules()
    surfaces = {part for part in {_part(name) for name in modules} if _is_surface(part, modules)}
    shared = {part for layer in LAYERS[[n for n, _ in LAYERS].index(SURFACES_LAYER) + 1:] for part in layer[1]}
    found = sorted(f"{part} -> {target}" for part, targets in _imports(modules).items() if part in shared
                   for target in targets & surfaces)
    assert surfaces >= {"llmsim.responses", "llmsim.chat", "llmsim.messages"} and not found, found


def test_the_walk_sees_imports() -> None:
    """The check above could pass by seeing nothing: it must find what the app factory is known to import."""
    edges = _imports(_modules())
    assert {"llmsim.api", "llmsim.pipeline", "llmsim.store"} <= edges["llmsim.app"]
    assert "llmsim.generation" in edges["llmsim.backends"]


# A path of the project's own as comments and docstrings name them: under llmsim/, tests/, bench/, profiles/,
# docs/, examples/ or .ci/.
NAMED_PATH = re.compile(r"(?<![\w/.])((?:llmsim|tests|bench|profiles|docs|examples|\.ci)/[\w./-]*\w)")


PLACEHOLDERS = {"NAME", "FILE", "DIR"}  # `bench/NAME.py`: any of them, not a file


def _named_paths(text: str) -> set[str]:
    found = {match.rstrip(".") for match in NAMED_PATH.findall(text)}
    return {path for path in found if not PLACEHOLDERS & {part.split(".")[0] for part in path.split("/")}}


def _comments_and_docstrings(path: Path) -> str:
    source, tree = _parsed(path)
    said = [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node)
            if docstring:
                said.append(docstring)
    return "\n".join(said)


def test_every_file_a_comment_names_exists() -> None:
    sources = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py"),
               *(ROOT / "examples").rglob("*.py")]
    missing = sorted(f"{source.relative_to(ROOT)}: {named}" for source in sources
                     if "node_modules" not in source.parts
                     for named in _named_paths(_comments_and_docstrings(source))
                     if not (ROOT / named).exists() and not any(ROOT.glob(named)))
    assert not missing, "comments name files that do not exist:\n" + "\n".join(missing)


def test_the_path_check_finds_names() -> None:
    assert _named_paths("see llmsim/api/sse.py, and tests/test_x.py.") == {"llmsim/api/sse.py", "tests/test_x.py"}
    assert _named_paths("python bench/NAME.py") == set()
