"""The package's shape, checked with the standard library: layers, cycles, private imports, sizes, ``__all__``, errors.

Layers, lowest first (a module imports only its own layer or lower; see docs/architecture.md)::

    errors, models  ->  core (tinyagent/*.py)  ->  retrieval, routing  ->  functions, finetune  ->  quant
    ->  evals  ->  apps

``__main__.py`` modules are entry points and may import anything. A package imports another package's public names
(its ``__init__``), never its ``_private`` modules; the core's own ``tinyagent/_*.py`` modules count as one package.

KNOWN_OFFENDERS lists what other branches are fixing in parallel; the integrator empties it as they merge. A test
fails both on a new offender and on a listed one that is fixed (so the list only shrinks).
"""

from __future__ import annotations

import ast
import builtins
import graphlib
import importlib
import re
import types
from collections import defaultdict
from pathlib import Path

import pytest

import tinyagent
import tinyagent.errors as errors

ROOT = Path(tinyagent.__file__).parent
LAYERS = {
    "errors": 0, "models": 0, "core": 1, "retrieval": 2, "routing": 2, "functions": 3, "finetune": 3, "quant": 4,
    "evals": 5, "apps": 6,
}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80

# Aliases kept at old import paths for callers outside the package (benchmarks, README, apps), each re-exporting
# names that moved up a layer. They are exempt from the layer rules; delete each once its callers use the new path.
COMPAT_ALIASES = {
    "tinyagent.scoring": "tinyagent.evals",
    "tinyagent.budget": "tinyagent.routing",
    "tinyagent.functions.bench": "tinyagent.evals",
}

# Known offenders, owned by other branches; the integrator removes each entry as the fix merges. Owners in brackets:
# run = tinyagent/_agent.py -> tinyagent/run/; cli = apps/cli, voice, finetune/_cli, quant/__main__; functions =
# functions/_builtin, _demo, apps/mcp; server = apps/server; models = models/llama/, _openai, _catalog (integrator);
# finetune/quant = finetune/_distill, _train, quant/_compare, _export, llama_cpp_tools (no helper this round).
KNOWN_OFFENDERS: dict[str, set[str]] = {
    "layers": set(),
    "private": set(),
    "cycles": set(),
    "module_size": set(),
    "function_size": set(),
    "exports": set(),
    "errors": set(),
}


# -- the import graph ----------------------------------------------------------------------------------------------
def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
SUBPACKAGES = {p.parent.name for p in ROOT.glob("*/__init__.py")}
CORE_PACKAGES = {"run"}  # the run loop's stages: core modules that live in a folder of their own


def package_of(module: str) -> str:
    """``errors``, ``core`` (tinyagent/*.py and the run loop, tinyagent/run/) or the subpackage's name."""
    parts = module.split(".")
    if module == "tinyagent.errors":
        return "errors"
    if len(parts) >= 2 and parts[1] in SUBPACKAGES and parts[1] not in CORE_PACKAGES:
        return parts[1]
    return "core"


def _targets(importer: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = importer.split(".")
        is_package = MODULES[importer].name == "__init__.py"
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names]


def _is_main_block(node: ast.AST) -> bool:
    """``if __name__ == "__main__":``: code that runs only as a program, an entry point like ``__main__.py``."""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and any(isinstance(c, ast.Constant) and c.value == "__main__"
                                                   for c in test.comparators))


def import_edges() -> list[tuple[str, str]]:
    """Every ``(importer, imported module)`` inside tinyagent, including lazy and TYPE_CHECKING imports, except in
    ``if __name__ == "__main__":`` blocks (entry points)."""
    edges = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        entry = {id(n) for block in ast.walk(tree) if _is_main_block(block) for n in ast.walk(block)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in entry:
                edges += [(module, t) for t in _targets(module, node) if t.split(".")[0] == "tinyagent"]
    return edges


EDGES = import_edges()


def _is_entry_point(module: str) -> bool:
    return module.endswith(".__main__")


def _checked(module: str) -> bool:
    return not _is_entry_point(module) and module not in COMPAT_ALIASES


def _assert_offenders(kind: str, found: set[str]) -> None:
    known = KNOWN_OFFENDERS[kind]
    new = sorted(found - known)
    fixed = sorted(known - found)
    assert not new, f"{kind}: new offenders (fix them, do not list them):\n  " + "\n  ".join(new)
    assert not fixed, f"{kind}: fixed, so remove from KNOWN_OFFENDERS[{kind!r}]:\n  " + "\n  ".join(fixed)


def test_layer_order() -> None:
    found = set()
    for importer, target in EDGES:
        real = COMPAT_ALIASES.get(target, target)  # an alias counts as the package it re-exports
        if _checked(importer) and LAYERS[package_of(real)] > LAYERS[package_of(importer)]:
            found.add(f"{importer} -> {target}")
    _assert_offenders("layers", found)


def test_no_import_of_another_packages_private_module() -> None:
    found = set()
    for importer, target in EDGES:
        parts = target.split(".")
        owner = package_of(target)
        if owner in ("core", "errors") or package_of(importer) == owner:
            continue
        if any(p.startswith("_") and not p.startswith("__") for p in parts[2:]):
            found.add(f"{importer} -> {target}")
    _assert_offenders("private", found)


def test_no_cycles_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for importer, target in EDGES:
        a, b = package_of(importer), package_of(COMPAT_ALIASES.get(target, target))
        if a != b and _checked(importer):
            graph[a].add(b)
    found = set()
    for a in list(graph):  # every package that can reach itself
        seen, todo = set(), list(graph[a])
        while todo:
            b = todo.pop()
            if b not in seen:
                seen.add(b)
                todo += graph.get(b, ())
        if a in seen:
            found.add(a)
    _assert_offenders("cycles", {f"{a} is on a cycle" for a in found})
    if not found:
        graphlib.TopologicalSorter(graph).prepare()  # raises CycleError on any cycle


def test_the_graph_test_sees_known_edges() -> None:
    assert ("tinyagent.routing._router", "tinyagent._routing_base") in EDGES  # relative ``from .. import``
    assert package_of("tinyagent._agent") == "core" and package_of("tinyagent.models._base") == "models"
    assert ("tinyagent.evals._evalcheck", "tinyagent.functions") in EDGES


# -- sizes ---------------------------------------------------------------------------------------------------------
def test_module_size() -> None:
    found = set()
    for module, path in MODULES.items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            found.add(f"{module} ({lines} lines)")
    _assert_offenders("module_size", {re.sub(r" \(\d+ lines\)", "", f) for f in found})


def test_function_size() -> None:
    found = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.add(f"{module}:{node.name}")
    _assert_offenders("function_size", found)


# -- exported members (as httpx's tests/test_exported_members.py) --------------------------------------------------
PACKAGES = sorted(m for m, p in MODULES.items() if p.name == "__init__.py")
# Names every lazy ``__init__`` needs that are not API: the __future__ import and typing helpers.
_NOT_API = {"annotations", "TYPE_CHECKING", "Any"}


def _public_names(module: types.ModuleType) -> set[str]:
    names = set()
    for name, value in vars(module).items():
        if name.startswith("_") or name in _NOT_API:
            continue
        if isinstance(value, types.ModuleType) and name not in getattr(module, "__all__", ()):
            continue  # a submodule that something imported; it is reachable, not exported
        names.add(name)
    return names | set(getattr(module, "_LAZY", {}))


@pytest.mark.parametrize("package", PACKAGES)
def test_all_equals_the_public_names(package: str) -> None:
    module = importlib.import_module(package)
    exported = getattr(module, "__all__", None)
    problems = set()
    if exported is None:
        problems.add(f"{package}: no __all__")
    else:
        assert len(exported) == len(set(exported)), f"{package}.__all__ has duplicates"
        problems |= {f"{package}: {n} is public but not in __all__" for n in _public_names(module) - set(exported)}
        missing = {n for n in exported if n not in _public_names(module) and not hasattr(module, n)}
        problems |= {f"{package}: {n} is in __all__ but not defined" for n in missing}
    _assert_offenders("exports", problems | {p for p in KNOWN_OFFENDERS["exports"] if not p.startswith(package + ":")})


# -- the error tree ------------------------------------------------------------------------------------------------
def _exception_classes() -> dict[str, tuple[str, ast.ClassDef]]:
    """``module.Class`` -> (module, class) for every class in tinyagent that derives (by name) from an exception."""
    known = {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)
             and issubclass(getattr(builtins, n), BaseException)}
    classes: list[tuple[str, ast.ClassDef]] = []
    for module, path in MODULES.items():
        classes += [(module, n) for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(n, ast.ClassDef)]
    found: dict[str, tuple[str, ast.ClassDef]] = {}
    changed = True
    while changed:
        changed = False
        for module, node in classes:
            if _base_names(node) & known and f"{module}.{node.name}" not in found:
                found[f"{module}.{node.name}"] = (module, node)
                known.add(node.name)
                changed = True
    return found


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}


def test_every_exception_is_in_errors_and_is_a_tinyagent_error() -> None:
    found = set()
    tree_names = set(errors.__all__)
    for qualified, (module, node) in _exception_classes().items():
        if module == "tinyagent.errors":
            assert issubclass(getattr(errors, node.name), errors.TinyAgentError), qualified
            assert node.name in errors.__all__, f"{qualified} is not exported"
        elif not node.name.startswith("_"):
            found.add(f"{qualified} is defined outside tinyagent/errors.py")
        elif not _base_names(node) & tree_names:  # a private control-flow exception may stay in its module
            found.add(f"{qualified} does not subclass TinyAgentError")
    _assert_offenders("errors", found)


def test_the_error_tree_is_written_out_in_the_errors_docstring() -> None:
    assert errors.__doc__ is not None
    parents: dict[str, str] = {}
    stack: list[str] = []
    for line in errors.__doc__.splitlines():
        match = re.match(r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z]\w+)", line)
        if not match or not isinstance(getattr(errors, match["name"], None), type):
            continue
        depth = (len(match["indent"]) - 4) // 4
        stack[depth:] = [match["name"]]
        if depth:
            parents[match["name"]] = stack[depth - 1]
    documented = {*parents, "TinyAgentError"}
    classes = {n for n in errors.__all__ if isinstance(getattr(errors, n), type)}
    assert classes == documented, f"missing from the tree: {classes - documented}; extra: {documented - classes}"
    for child, parent in parents.items():
        assert getattr(errors, parent) in getattr(errors, child).__bases__, f"{child} is drawn under {parent}"


def test_old_import_paths_still_work() -> None:
    import tinyagent.budget
    import tinyagent.evals
    import tinyagent.functions.bench
    import tinyagent.retrieval
    import tinyagent.routing
    import tinyagent.scoring

    assert tinyagent.scoring.evaluate is tinyagent.evals.evaluate
    assert tinyagent.scoring.load_evalset is tinyagent.evals.load_evalset
    assert tinyagent.budget.BudgetLedger is tinyagent.routing.BudgetLedger
    assert tinyagent.functions.bench.default_examples is tinyagent.evals.default_examples
    assert tinyagent.retrieval.stress_registry is tinyagent.evals.stress_registry  # a lazy alias, not in __all__
    assert "stress_registry" not in tinyagent.retrieval.__all__
    assert set(COMPAT_ALIASES) <= set(MODULES)
