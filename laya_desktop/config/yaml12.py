"""models.yaml in one YAML dialect: PyYAML's safe loader and dumper with YAML 1.2's booleans.

PyYAML implements YAML 1.1, where `yes`, `no`, `on`, `off`, `y` and `n` are booleans; ruamel.yaml,
which saves over an existing file (roundtrip.py), writes YAML 1.2, where they are plain strings.
Mixed, `tags: [no, on]` would be saved as strings and read back as booleans. Here only
true/false (as YAML 1.2 spells them: true, True, TRUE and the same for false) are booleans, on
load and on save alike, so a string that reads as a boolean is always quoted.
"""
from __future__ import annotations

import re

import yaml

BOOL_TAG = "tag:yaml.org,2002:bool"
YAML12_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


def _yaml12_resolvers() -> dict:
    resolvers = {first: [(tag, regexp) for tag, regexp in entries if tag != BOOL_TAG]
                 for first, entries in yaml.resolver.Resolver.yaml_implicit_resolvers.items()}
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
