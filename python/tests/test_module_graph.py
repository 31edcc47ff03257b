"""The adapter's modules import one another without a circle, counting every
import: at the top, inside a function, or under TYPE_CHECKING (a circle
that only typing sees is still a circle to a reader). The dispatching code
knows nothing of the registry."""

import ast
import unittest
from typing import Dict, List, Set

from support import ROOT

PACKAGE = ROOT / "python" / "loopx_hooks"


def imports_of(module: str) -> Set[str]:
    """The sibling modules `module` imports, wherever the import stands."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text("utf-8"))
    found: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module is not None:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("loopx_hooks."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("loopx_hooks."))
    return found - {module}


def graph() -> Dict[str, Set[str]]:
    return {path.stem: imports_of(path.stem) for path in sorted(PACKAGE.glob("*.py"))}


def circles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    found: List[List[str]] = []

    def walk(at: str, path: List[str]) -> None:
        for nxt in sorted(edges.get(at, ())):
            if nxt == path[0]:
                found.append(path + [nxt])
            elif nxt not in path and nxt > path[0]:
                walk(nxt, path + [nxt])

    for start in sorted(edges):
        walk(start, [start])
    return found


class TheModuleGraph(unittest.TestCase):
    def test_no_module_of_the_adapter_imports_itself_through_another(self):
        edges = graph()
        self.assertIn("_dispatch", edges)
        self.assertEqual(circles(edges), [])

    def test_the_dispatching_code_does_not_name_the_registry(self):
        self.assertNotIn("_registry", imports_of("_dispatch"))
        text = (PACKAGE / "_dispatch.py").read_text("utf-8")
        self.assertNotIn("_registry", text)
        self.assertNotIn("HookRegistry", text)

    def test_the_check_finds_a_circle(self):
        self.assertEqual(circles({"a": {"b"}, "b": {"a"}, "c": set()}), [["a", "b", "a"]])
        self.assertEqual(circles({"a": {"b"}, "b": {"c"}, "c": set()}), [])


if __name__ == "__main__":
    unittest.main()
