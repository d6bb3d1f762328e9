"""The layers of docs/ARCHITECTURE.md hold (the import-linter contracts in pyproject.toml), and
nothing outside laya_desktop/gui/ imports Qt (a Qt-free core), not even lazily."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "laya_desktop"
QT_ROOTS = ("PySide6", "pyqtgraph", "shiboken6", "PyQt5", "PyQt6", "superqt", "qtpy")


def core_modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "gui" not in p.relative_to(PACKAGE).parts]


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_core_module_imports_qt_in_its_source():
    offenders = {str(p.relative_to(PACKAGE)): sorted(imported_roots(p) & set(QT_ROOTS))
                 for p in core_modules()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_the_whole_core_loads_no_qt():
    names = sorted(".".join(("laya_desktop", *p.relative_to(PACKAGE).with_suffix("").parts))
                   .removesuffix(".__init__") for p in core_modules())
    names = [n for n in names if not n.endswith("__main__") and "mlx_backend" not in n]
    code = ("import importlib, sys\n"
            f"for name in {names!r}: importlib.import_module(name)\n"
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {QT_ROOTS!r})\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_import_contracts_hold():
    """Layers (cli > gui > engine, control, loadtest > runners, routing, telemetry > config), the
    GUI apart from the engine, and no Qt under the core, indirect imports included."""
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[done.stdout.find("Broken contracts"):] or done.stderr
    contracts = (ROOT / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")
    assert contracts >= 3 and f"Contracts: {contracts} kept, 0 broken." in done.stdout
