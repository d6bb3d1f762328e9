"""models.yaml is read and written in one dialect: YAML 1.2's booleans (only true/false) and no
base-60 numbers, so the ruamel.yaml save over an existing file and the PyYAML load agree on what
is a string."""
from __future__ import annotations

from laya_desktop.config.address import server_address
from laya_desktop.config.store import (
    config_to_dict, dump_config_text, load_config, parse_config_text, save_config_atomic,
)

WORDS = ["no", "on", "yes", "off"]

HAND_WRITTEN = """\
models:
  - name: small          # the small one
    backend: llama_cpp
    path: /m/small.gguf
    keep_in_memory: true
    warmup: False
routes:
  - name: words
    match: {tags: [no, on, yes, off]}
    target: small
  - name: default
    target: small
memory:
  guard: FALSE
"""


def test_words_that_yaml_1_1_calls_booleans_load_as_strings(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(HAND_WRITTEN)
    config = load_config(path)
    assert config.routes[0].match.tags == WORDS
    model = config.models[0]
    assert model.keep_in_memory is True and model.warmup is False
    assert config.memory.guard is False


def test_they_round_trip_as_strings_through_a_save_over_the_file(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(HAND_WRITTEN)
    data = config_to_dict(load_config(path))
    data["routes"][1]["match"] = {"tags": ["y", "n", "true", "1:20", "="]}
    save_config_atomic(data, path)
    text = path.read_text()
    assert "# the small one" in text          # saved in place by ruamel.yaml, not dumped anew
    config = load_config(path)
    assert config.routes[0].match.tags == WORDS
    assert config.routes[1].match.tags == ["y", "n", "true", "1:20", "="]   # 1:20 was 80 in 1.1
    assert config.models[0].keep_in_memory is True and config.memory.guard is False


def test_they_round_trip_as_strings_through_a_fresh_dump(tmp_path):
    data = config_to_dict(load_config(_written(tmp_path)))
    data["routes"][1]["match"] = {"tags": ["true", "False", "on"]}
    path = tmp_path / "fresh.yaml"
    save_config_atomic(data, path)             # no file yet: PyYAML writes it
    config = load_config(path)
    assert config.routes[0].match.tags == WORDS
    assert config.routes[1].match.tags == ["true", "False", "on"]
    assert config.models[0].keep_in_memory is True
    text = dump_config_text(data)
    assert "- 'true'" in text and "- 'False'" in text   # a string that reads as a boolean is quoted


def test_a_yaml_1_1_boolean_in_a_boolean_field_is_a_clear_error():
    config, errors = parse_config_text(HAND_WRITTEN.replace("guard: FALSE", "guard: no"))
    assert config is None
    assert [(e.path, e.message) for e in errors] == [("memory.guard", "expected true or false, got 'no'")]


def test_clients_read_the_server_section_in_the_same_dialect(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("server: {host: 127.0.0.1, port: 8600, api_key: off}\n" + HAND_WRITTEN)
    assert server_address(path) == ("127.0.0.1", 8600, "off")   # YAML 1.1 would read no key
    assert load_config(path).server.api_key == "off"


def _written(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(HAND_WRITTEN)
    return path
