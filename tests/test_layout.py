"""The import rules of docs/ARCHITECTURE.md, checked on the source (every import, also the
ones inside functions and under TYPE_CHECKING): a wrong import fails CI, not a review."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bridge", "connectors", "mappings")

# Top to bottom. A module may import its own unit and any unit of a lower layer; units that
# share a layer are independent of each other.
LAYERS: list[tuple[str, ...]] = [
    ("bridge.cli",),  # faces
    ("bridge.daemon",),
    ("bridge.web",),
    ("bridge.cycle",),  # one cycle and its steps
    ("bridge.out", "bridge.sim"),  # what goes out; simulated people
    ("bridge.intake", "bridge.learning"),  # getting data in; learning from answers
    ("connectors", "bridge.runner", "bridge.clock"),
    ("mappings", "bridge.store", "bridge.auth", "bridge.sample_data"),
    ("bridge.config", "bridge.logs"),  # the helpers every stage shares
    ("bridge.errors", "bridge.files"),
]
FACES = ("bridge.cli", "bridge.web", "bridge.daemon")
MAX_TOP_LEVEL_MODULES = 12


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the project modules it imports (a `from pkg import sub` names pkg.sub)."""
    files = {
        module_name(p, root): p
        for pkg in PACKAGES
        for p in (root / pkg).rglob("*.py")
        if "migrations" not in p.parts
    }
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_pkg = path.name == "__init__.py"
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_pkg else name.split(".")[:-1]
                    here = here[: len(here) - node.level + 1]
                    base = ".".join([*here, base] if base else here)
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names
                ]
            else:
                continue
            found.update(t for t in targets if t.split(".")[0] in PACKAGES and t != name)
        graph[name] = found
    return graph


def unit_of(module: str) -> str:
    for layer in LAYERS:
        for unit in layer:
            if module == unit or module.startswith(unit + "."):
                return unit
    return module


def layer_of(unit: str) -> int | None:
    return next((i for i, layer in enumerate(LAYERS) if unit in layer), None)


def violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        here = unit_of(module)
        if module != "bridge" and layer_of(here) is None:
            found.append(f"{module}: in no layer of tests/test_layout.py; add its unit there")
            continue
        for target in sorted(targets):
            there = unit_of(target)
            if there == here or target == "bridge":
                continue
            lo, hi = layer_of(here), layer_of(there)
            if hi is None or lo is None or hi <= lo:
                found.append(f"{module} imports {target}: {here} may not depend on {there}")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


def test_imports_point_down_the_layers(graph: dict[str, set[str]]) -> None:
    assert violations(graph) == []


@pytest.mark.parametrize(
    ("prefix", "forbidden"),
    [
        ("mappings", ("bridge", "connectors")),
        ("connectors", ("mappings", "bridge.runner")),
        ("bridge.store", FACES),
    ],
)
def test_named_rules_hold_through_every_chain(
    graph: dict[str, set[str]], prefix: str, forbidden: tuple[str, ...]
) -> None:
    """Not only direct imports: connectors must not reach mappings through bridge.config."""
    bad = {
        (module, target)
        for module in graph
        if module == prefix or module.startswith(prefix + ".")
        for target in reachable(graph, module)
        if any(target == f or target.startswith(f + ".") for f in forbidden)
    }
    assert sorted(bad) == []


def test_every_layer_unit_exists(graph: dict[str, set[str]]) -> None:
    units = {unit_of(m) for m in graph}
    assert {u for layer in LAYERS for u in layer} <= units


def test_few_modules_directly_in_bridge() -> None:
    top = sorted(p.name for p in (ROOT / "bridge").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir(exist_ok=True)
        (tmp_path / pkg / "__init__.py").touch()
    return import_graph(tmp_path)


def test_the_checker_catches_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    """The rules above can fail: a store that imports a face, hidden inside a function,
    and two stages importing each other are both reported."""
    graph = _tree(
        tmp_path,
        {
            "bridge/store/__init__.py": "",
            "bridge/store/db.py": "def f():\n    from bridge.web.app import x\n",
            "bridge/web/__init__.py": "",
            "bridge/web/app.py": "from bridge.store import db\n",
            "bridge/out/__init__.py": "",
            "bridge/out/a.py": "from bridge.intake.b import y\n",
            "bridge/intake/__init__.py": "",
            "bridge/intake/b.py": "from ..out import a\n",
            "connectors/x.py": "import bridge.config\n",
            "bridge/config.py": "from mappings import slots\n",
            "mappings/slots.py": "",
        },
    )
    found = violations(graph)
    assert any("bridge.store.db imports bridge.web.app" in v for v in found)
    assert any("bridge.intake.b imports bridge.out.a" in v for v in found)
    assert any("bridge.config imports mappings.slots" in v for v in found)
    assert sorted(map(tuple, cycles(graph))) == [
        ("bridge.intake.b", "bridge.out.a"),
        ("bridge.store.db", "bridge.web.app"),
    ]
    assert "mappings.slots" in reachable(graph, "connectors.x")
