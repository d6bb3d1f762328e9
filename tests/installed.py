"""Skip marks for optional packages, found without importing them: `pytest.importorskip("mlx_lm")`
at a module's top cost every xdist worker seconds of its collection (mlx_lm brings transformers)."""
from __future__ import annotations

import importlib.util

import pytest


def requires(*modules: str) -> pytest.MarkDecorator:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")
