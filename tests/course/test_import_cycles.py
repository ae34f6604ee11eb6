"""No two modules of the course's machinery import each other, at the top or inside a function (grimp sees both)."""

from __future__ import annotations

import grimp


def _mutual_imports(package: str) -> list[tuple[str, str]]:
    graph = grimp.build_graph("verlstudy", cache_dir=None)
    found = []
    for module in sorted(m for m in graph.modules if m.startswith(package + ".")):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported.startswith(package + ".") and graph.find_shortest_chain(importer=imported, imported=module):
                found.append((module, imported))
    return found


def test_the_course_machinery_has_no_import_cycle() -> None:
    assert _mutual_imports("verlstudy.course") == []
