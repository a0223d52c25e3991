"""Sluice's modules import one another without a loop: each builds on the ones below it (in the
data plane ``builder`` on ``bus`` on ``query``; in the console the API on the services on the
selectors), so any of them can be read, tested and changed knowing only what it imports. An
import inside a function counts as much as one at the top: it is the same dependence, only
later.

The graph is grimp's (import-linter's own library), read from the source files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import grimp

PACKAGES = ("console", "pipelines", "runtime_adapter")


def import_graph() -> dict[str, set[str]]:
    """Each of Sluice's modules -> the modules of Sluice it imports directly."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    return {
        module: set(graph.find_modules_directly_imported_by(module)) & graph.modules
        for module in graph.modules
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


def test_no_module_imports_itself_through_others() -> None:
    graph = import_graph()
    for module in ("pipelines.builder", "pipelines.bus.router", "console.services.reconcile.loop"):
        assert module in graph  # the graph is read, of every package
    assert "runtime_adapter.base" in graph
    assert import_cycles(graph) == []
