"""docs/configuration.md documents every field of the models.yaml schema, and no field the schema
lacks: each field appears as its dotted path in backticks (`server.host`, `models[].n_ctx`,
`routes[].match.semantic.top_k`)."""
from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path

from laya_desktop.config import schema

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
SECTIONS = ("server", "models", "routes", "scheduler", "memory")


def _nested_dataclass(annotation) -> tuple[type | None, bool]:
    """The dataclass a field holds (directly, optionally or as list items) and whether in a list."""
    origin = typing.get_origin(annotation)
    if origin is list:
        inner, _ = _nested_dataclass(typing.get_args(annotation)[0])
        return inner, True
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            inner, in_list = _nested_dataclass(arg)
            if inner is not None:
                return inner, in_list
        return None, False
    if dataclasses.is_dataclass(annotation):
        return annotation, False
    return None, False


def _field_paths(cls: type, prefix: str) -> list[tuple[str, dataclasses.Field]]:
    hints = typing.get_type_hints(cls)
    paths = []
    for f in dataclasses.fields(cls):
        path = f"{prefix}.{f.name}"
        paths.append((path, f))
        inner, in_list = _nested_dataclass(hints[f.name])
        if inner is not None:
            paths += _field_paths(inner, f"{path}[]" if in_list else path)
    return paths


def schema_fields() -> list[tuple[str, dataclasses.Field]]:
    hints = typing.get_type_hints(schema.Config)
    paths = []
    for section in SECTIONS:
        inner, in_list = _nested_dataclass(hints[section])
        paths += _field_paths(inner, f"{section}[]" if in_list else section)
    return paths


def documented_paths(text: str) -> set[str]:
    """Backticked tokens that look like a field path of one of the sections."""
    heads = "|".join(("models[]", "routes[]", "server", "scheduler", "memory"))
    pattern = r"`((?:%s)(?:\.\w+(?:\[\])?)+)`" % heads.replace("[]", r"\[\]")
    return set(re.findall(pattern, text))


def test_the_walk_reaches_every_nesting_level():
    paths = {p for p, _ in schema_fields()}
    assert "server.host" in paths
    assert "models[].prompt_cache.ram_mb" in paths
    assert "routes[].targets[].max_active" in paths
    assert "routes[].match.semantic.min_probability" in paths
    assert "memory.sample_hz" in paths
    assert len(paths) > 60


def test_every_schema_field_has_help():
    undocumented = [p for p, f in schema_fields() if not f.metadata.get("doc")]
    assert undocumented == [], f"fields without _doc(...) help in config/schema.py: {undocumented}"


def test_configuration_md_documents_every_schema_field():
    text = DOC.read_text(encoding="utf-8")
    documented = documented_paths(text)
    missing = [p for p, _ in schema_fields() if p not in documented]
    assert missing == [], f"docs/configuration.md lacks these models.yaml fields: {missing}"


def test_configuration_md_names_no_field_the_schema_lacks():
    text = DOC.read_text(encoding="utf-8")
    known = {p for p, _ in schema_fields()}
    stale = sorted(p for p in documented_paths(text) if p not in known)
    assert stale == [], f"docs/configuration.md names fields that models.yaml does not have: {stale}"


def test_a_field_left_out_of_the_page_is_caught():
    text = DOC.read_text(encoding="utf-8").replace("`models[].n_ctx`", "n_ctx")
    assert "models[].n_ctx" not in documented_paths(text)
