"""The package's layers hold: every module imports, and the static import graph has no cycle.

The graph is read with ``ast`` from the sources, imports inside functions included (a lazy import
still ties two modules together: it only postpones the cycle to the moment it runs).
"""

import ast
import importlib
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "kubectl_aicr"


def _modules():
    """{dotted module name: source path} for every .py file of the package (``_prerendered`` is generated)."""
    found = {}
    for folder, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if not name.endswith(".py") or name == "_prerendered.py":
                continue
            parts = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = os.path.join(folder, name)
    return found


def _imports(module, path, modules):
    """The package's modules that ``module`` imports anywhere in its source."""
    is_package = path.endswith("__init__.py")
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets.add(source)
            targets.update(source + "." + alias.name for alias in node.names)
    return {t for t in targets if t in modules and t != module}


def _graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycle(graph):
    """One cycle as a list of modules, or None (depth-first search, colouring nodes)."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_every_module_imports():
    for name in sorted(_modules()):
        if name != PACKAGE + ".__main__":  # importing it runs the program; its imports are in the graph
            importlib.import_module(name)


def test_the_static_import_graph_has_no_cycle():
    graph = _graph()
    assert len(graph) > 20 and graph["kubectl_aicr.kube.rest"]  # the walk found the package and its edges
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_kubernetes_side_imports_nothing_of_the_aicr_side_or_the_commands():
    graph = _graph()
    upward = sorted((name, target) for name, targets in graph.items() if name.startswith(PACKAGE + ".kube")
                    for target in targets
                    if target.startswith((PACKAGE + ".aicr", PACKAGE + ".commands", PACKAGE + ".cli",
                                          PACKAGE + ".main", PACKAGE + ".output")))
    assert upward == []


def test_the_network_leaf_and_the_proxy_rules_import_nothing_above_them():
    graph = _graph()
    assert graph[PACKAGE + ".kube.proxy_rules"] <= {PACKAGE + ".errors", PACKAGE + ".records", PACKAGE + ".kube.redact"}
    assert graph[PACKAGE + ".kube.redact"] == set()  # the one URL redactor: a leaf
    assert graph[PACKAGE + ".kube.net"] <= {PACKAGE + ".errors", PACKAGE + ".kube.proxy_rules"}


def test_records_are_a_leaf_and_nothing_imports_typing_or_dataclasses():
    """Start-up (issue 15): records cost nothing to declare, so no module pays for ``typing`` (~4 ms) or
    ``dataclasses`` (which imports ``inspect``); annotations stay strings (``from __future__ import
    annotations``) wherever a record is declared."""
    graph = _graph()
    assert graph[PACKAGE + ".records"] == set()
    for name, path in sorted(_modules().items()):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and not node.level}
        assert not imported & {"typing", "dataclasses"}, name
        declares = any(isinstance(node, ast.ClassDef) and any(getattr(base, "id", None) == "Record"
                                                              for base in node.bases) for node in tree.body)
        if declares:
            assert "__future__" in imported, name


def test_every_command_of_the_one_table_has_its_module():
    """main dispatches from cli.COMMANDS alone: each command but ``help`` (cli answers it) is a module of
    kubectl_aicr.commands with a ``run``, and no module there runs a command the table does not name."""
    from kubectl_aicr import cli

    runnable = sorted(name for name in cli.COMMANDS if name != "help")
    for name in runnable:
        assert callable(importlib.import_module("kubectl_aicr.commands." + name).run), name
    helpers = {"__init__", "complete", "writes"}  # __complete is main's, outside the table; writes is shared
    folder = os.path.join(ROOT, PACKAGE, "commands")
    modules = sorted(n[:-3] for n in os.listdir(folder) if n.endswith(".py") and n[:-3] not in helpers)
    assert modules == runnable
