"""models.yaml in one YAML dialect: PyYAML's safe loader and dumper with YAML 1.2's booleans.

PyYAML implements YAML 1.1, where `yes`, `no`, `on`, `off`, `y` and `n` are booleans; ruamel.yaml,
which saves over an existing file (roundtrip.py), writes YAML 1.2, where they are plain strings.
Mixed, `tags: [no, on]` would be saved as strings and read back as booleans. Here only
true/false (as YAML 1.2 spells them: true, True, TRUE and the same for false) are booleans, on
load and on save alike, so a string that reads as a boolean is always quoted. The other 1.1
scalars that ruamel.yaml writes unquoted go too: base-60 numbers (`1:20` was 80) and `=`.
"""
from __future__ import annotations

import re

import yaml

BOOL_TAG = "tag:yaml.org,2002:bool"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
VALUE_TAG = "tag:yaml.org,2002:value"
YAML12_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
# PyYAML's own patterns without their base-60 alternatives
INT = re.compile(r"""^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+)$""", re.X)
FLOAT = re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                      |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                      |[-+]?\.(?:inf|Inf|INF)
                      |\.(?:nan|NaN|NAN))$""", re.X)
REPLACED = {BOOL_TAG: YAML12_BOOL, INT_TAG: INT, FLOAT_TAG: FLOAT, VALUE_TAG: None}


def _yaml12_resolvers() -> dict:
    resolvers = {}
    for first, entries in yaml.resolver.Resolver.yaml_implicit_resolvers.items():
        kept = [(tag, REPLACED.get(tag, regexp)) for tag, regexp in entries if tag != BOOL_TAG]
        resolvers[first] = [(tag, regexp) for tag, regexp in kept if regexp is not None]
    for first in "tTfF":
        resolvers.setdefault(first, []).insert(0, (BOOL_TAG, YAML12_BOOL))
    return resolvers


class SafeLoader(yaml.SafeLoader):
    yaml_implicit_resolvers = _yaml12_resolvers()


class SafeDumper(yaml.SafeDumper):
    yaml_implicit_resolvers = SafeLoader.yaml_implicit_resolvers


def safe_load(text: str):
    return yaml.load(text, Loader=SafeLoader)


def safe_dump(data, **kwargs) -> str:
    return yaml.dump(data, Dumper=SafeDumper, **kwargs)
