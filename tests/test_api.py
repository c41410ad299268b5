"""The public surface and the layering rule: each layer imports only the layers below it."""

from __future__ import annotations

import ast
from pathlib import Path

import memdb

PACKAGE = Path(memdb.__file__).parent

# module -> its layer; a module may import memdb modules of its own or lower layers only
LAYERS = {
    "errors": 0, "codec": 1, "store": 2, "store_postgres": 2, "globals": 3,
    "native": 3, "sanitize": 4, "text": 4, "settings": 4, "models": 4, "relevance": 4, "episodes": 5,
    "summarize": 6, "cold": 6, "lifecycle": 7, "timephrase": 6, "query": 7,
    "knowledge": 8, "reflection": 8, "patterns": 8, "timeline": 8,
    "database": 9, "demo": 10, "cli": 11, "mcp_server": 11,
}  # fmt: skip


def test_all_is_sorted_and_importable() -> None:
    assert memdb.__all__ == sorted(memdb.__all__)
    for name in memdb.__all__:
        assert hasattr(memdb, name), name


def test_py_typed_ships() -> None:
    assert (PACKAGE / "py.typed").exists()


def test_imports_point_down_only() -> None:
    problems = []
    for path in sorted(PACKAGE.glob("*.py")):
        module = path.stem
        if module.startswith("_"):
            continue
        assert module in LAYERS, f"memdb/{path.name} has no layer in tests/test_api.py::LAYERS"
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memdb"):
                names = [node.module.split(".")[1]] if "." in node.module else [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name.split(".")[1] for a in node.names if a.name.startswith("memdb.")]
            for imported in names:
                if imported in LAYERS and LAYERS[imported] > LAYERS[module]:
                    problems.append(f"{module} (layer {LAYERS[module]}) imports {imported} (layer {LAYERS[imported]})")
    assert problems == []
