"""The data plane's modules import one another without a loop: each builds on the ones below
it (``builder`` on ``bus`` on ``query``), so any of them can be read, tested and changed
knowing only what it imports. An import inside a function counts as much as one at the top:
it is the same dependence, only later.

The graph is grimp's (import-linter's own library), read from the source files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import grimp

PACKAGE = "pipelines"


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the modules of the package it imports directly."""
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    return {
        module: {
            imported
            for imported in graph.find_modules_directly_imported_by(module)
            if imported == PACKAGE or imported.startswith(PACKAGE + ".")
        }
        for module in graph.modules
        if module == PACKAGE or module.startswith(PACKAGE + ".")
    }


def import_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or of a module importing
    itself), each sorted: Tarjan's algorithm, iterative so that a deep graph cannot exhaust
    Python's stack."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    cycles.append(sorted(component))
    return sorted(cycles)


def test_the_cycle_finder_finds_loops_and_only_loops() -> None:
    graph = {
        "a": {"b"},
        "b": {"c"},
        "c": {"a", "d"},
        "d": {"e"},
        "e": set(),
        "f": {"f"},
        "g": {"d"},
    }
    assert import_cycles(graph) == [["a", "b", "c"], ["f"]]
    assert import_cycles({"x": {"y"}, "y": set()}) == []


def test_the_data_plane_has_no_import_cycle() -> None:
    graph = import_graph()
    assert "pipelines.builder" in graph and "pipelines.bus.router" in graph  # the graph is read
    assert import_cycles(graph) == []
