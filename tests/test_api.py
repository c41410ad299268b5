"""The public surface and the layering rule: each layer package imports only the layers below it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import memdb

PACKAGE = Path(memdb.__file__).parent

# Layer packages (and the top-level modules) by height: code may import memdb modules of its own
# height or lower only. errors and native are the foundation every layer may use; cli and aio
# (the public name of memdb.surfaces.aio) are surfaces; integrations (optional extras for agent
# frameworks) sit above them and use the public API only.
LAYERS = {
    "errors": 0, "native": 0, "_scorer": 0,
    "engine": 1, "memory": 2, "lifecycle": 3, "query": 4, "governance": 5, "llm": 6, "surfaces": 7, "cli": 7, "aio": 7,
    "integrations": 8,
}  # fmt: skip


def _layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported_layers(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("memdb"):
            parts = node.module.split(".")
            found.update([parts[1]] if len(parts) > 1 else [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("memdb."))
    return found


PUBLIC = [
    "AnthropicReflector", "AnthropicSummarizer", "Database", "Entry", "Episode", "ExtractiveSummarizer", "Global",
    "Globals", "History", "Hit", "LMDBStore", "MaintenanceReport", "Memory", "OfflineReflector", "RecallResult",
    "RegexSanitizer", "Sanitizer", "Settings", "Store", "Summarizer", "__version__", "errors", "native", "open",
]  # fmt: skip


def test_all_is_pinned_sorted_and_importable() -> None:
    """The public API changes only on purpose: ``Hit`` (the query hit, once ``query.Memory``) is
    the one name the layout change added, and ``Memory`` is the owner handle."""
    assert memdb.__all__ == PUBLIC == sorted(PUBLIC)
    for name in memdb.__all__:
        assert hasattr(memdb, name), name


def test_aio_is_a_submodule_imported_on_demand() -> None:
    """``memdb.aio`` is public but not in ``__all__``: ``import memdb`` must not pay for asyncio,
    so it is reached as ``import memdb.aio`` (checked in a fresh interpreter)."""
    import subprocess
    import sys

    code = "import sys, memdb; a = 'asyncio' in sys.modules; import memdb.aio; print(a, memdb.aio.__all__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent).stdout
    assert out.split(" ", 1) == ["False", "['AsyncDatabase', 'AsyncMemory', 'open']\n"]


def test_py_typed_ships() -> None:
    assert (PACKAGE / "py.typed").exists()


def test_every_module_belongs_to_a_layer() -> None:
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py" or path.parent != PACKAGE:
            assert _layer_of(path) in LAYERS, f"{path.relative_to(PACKAGE)}: no layer in tests/test_api.py::LAYERS"


@pytest.mark.parametrize("layer", [name for name in LAYERS if (PACKAGE / name).is_dir()])
def test_imports_point_down_only(layer: str) -> None:
    problems = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for imported in _imported_layers(path):
            if imported in LAYERS and LAYERS[imported] > LAYERS[layer]:
                problems.append(f"{path.relative_to(PACKAGE)} (layer {layer}) imports memdb.{imported}")
    assert problems == []


def test_the_readme_layer_table_names_every_package() -> None:
    readme = (PACKAGE.parent / "README.md").read_text()
    for layer in LAYERS:
        if (PACKAGE / layer).is_dir():
            assert f"`memdb/{layer}/`" in readme, layer
