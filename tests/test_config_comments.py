"""Saving over an existing models.yaml keeps what its author wrote: comments, layout, order."""
from __future__ import annotations

import copy
import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_budget import examples, property_test

from laya_desktop.config import store
from laya_desktop.config.roundtrip import update_yaml_text
from laya_desktop.config.schema import ModelConfig, RouteConfig, RouteMatch
from laya_desktop.config.store import (
    config_defaults, config_to_dict, dump_config_text, load_config, parse_config_text,
    save_config_atomic,
)
from laya_desktop.config.validate import validate_config

REPO_YAML = Path(__file__).resolve().parents[1] / "models.yaml"

HAND_WRITTEN = """\
# My gateway.

server:
  port: 8555          # my port
  api_key: s3cret     # shared with the team
  # the host stays on loopback
  host: 127.0.0.1

models:
  - name: small
    backend: llama_cpp
    path: /m/small.gguf
  - name: big
    backend: llama_cpp
    path: "/m/big.gguf"
    n_ctx: 8192       # long prompts

routes:
  # Rules, first match wins.

  # code requests
  - name: code
    match: {tags: [code]}
    target: big
    fallback: [small]   # when big is busy

  # - name: sql
  #   match: {keywords: [SELECT]}
  #   target: big

  # long prompts
  - name: long
    match:
      min_prompt_chars: 8000
    target: big

  - name: default   # catch-all
    target: small
"""


def load_config_text(text: str):
    config, errors = parse_config_text(text)
    assert errors == []
    return config


def comment_lines(text: str) -> list[str]:
    return sorted(line.strip() for line in text.splitlines() if line.strip().startswith("#"))


def saved(tmp_path: Path, text: str, change) -> tuple[str, object]:
    """Write `text`, apply `change` to the config it holds, save, and return the new file."""
    path = tmp_path / "models.yaml"
    path.write_text(text)
    config = copy.deepcopy(load_config(path))
    change(config)
    save_config_atomic(config, path)
    assert load_config(path) == config
    return path.read_text(), config


def above(text: str, line: str) -> str:
    lines = text.splitlines()
    return lines[lines.index(line) - 1]


# --- the repository's models.yaml ----------------------------------------------------------------

def test_saving_the_same_config_leaves_the_repo_file_byte_for_byte(tmp_path):
    text = REPO_YAML.read_text()
    assert saved(tmp_path, text, lambda c: None)[0] == text
    assert update_yaml_text(text, config_to_dict(load_config(REPO_YAML)), config_defaults()) == text


def test_changed_values_change_only_their_lines_and_keep_their_comments(tmp_path):
    text = REPO_YAML.read_text()

    def change(config):
        config.server.port = 9000
        config.models[0].n_ctx = 8192

    new, _ = saved(tmp_path, text, change)
    changes = [(a, b) for a, b in zip(text.splitlines(), new.splitlines()) if a != b]
    assert len(new.splitlines()) == len(text.splitlines())
    assert changes == [
        ("  port: 8555", "  port: 9000"),
        ("    n_ctx: 16384           # tokens per sequence; the KV cache holds n_ctx x parallel",
         "    n_ctx: 8192            # tokens per sequence; the KV cache holds n_ctx x parallel"),
    ]


def test_a_route_added_at_the_front_and_reordered_keeps_the_examples(tmp_path):
    text = REPO_YAML.read_text()
    code = RouteConfig(name="code", target="gemma-270m", match=RouteMatch(tags=["code"]),
                       fallback=["gemma-270m"])
    new, _ = saved(tmp_path, text, lambda c: c.routes.insert(0, code))
    assert comment_lines(new) == comment_lines(text)
    assert "  #   target: gemma-270m\n\n  - name: code\n    target: gemma-270m\n" \
           "    match: {tags: [code]}\n    fallback: [gemma-270m]\n\n  - name: completions " in new

    again, config = saved(tmp_path, new, lambda c: c.routes.reverse())
    assert [r.name for r in config.routes] == ["default", "long-context", "agents", "completions", "code"]
    assert comment_lines(again) == comment_lines(text)
    assert "  - name: default                      # no conditions: matches everything" in again
    assert "  - name: agents                       # Codex (Responses) and Claude Code (Messages)" \
           " send 10-20k\n    match:                             # tokens of instructions" in again
    assert again.index("#   target: gemma-270m") < again.index("\n  - name: default") \
        < again.index("\n  - name: long-context") < again.index("\n  - name: agents") \
        < again.index("\n  - name: completions") < again.index("\n  - name: code")


def test_a_new_model_is_appended_without_the_defaults(tmp_path):
    text = REPO_YAML.read_text()
    model = ModelConfig(name="qwen", backend="llama_cpp", path="/m/qwen.gguf", n_gpu_layers=-1)
    new, _ = saved(tmp_path, text, lambda c: c.models.append(model))
    assert "  - name: qwen\n    backend: llama_cpp\n    path: /m/qwen.gguf\n    n_gpu_layers: -1\n" in new
    assert comment_lines(new) == comment_lines(text)
    # the commented-out examples stay at the end of the models list
    assert new.index("\n  - name: qwen") < new.index("# A GGUF file of your own:")


def test_setting_and_clearing_the_api_key_gives_back_the_repo_file(tmp_path):
    text = REPO_YAML.read_text()

    def secure(config):
        config.server.host, config.server.api_key = "0.0.0.0", "k"

    new, _ = saved(tmp_path, text, secure)
    assert "  port: 8555\n  api_key: k\n  # api_key: change-me " in new
    back, _ = saved(tmp_path, new, lambda c: setattr(c, "server", load_config(REPO_YAML).server))
    assert back == text


# --- a hand-written file -------------------------------------------------------------------------

@pytest.mark.parametrize("order", list(itertools.permutations(["code", "long", "default"])))
def test_reordered_routes_carry_their_own_comments(tmp_path, order):
    def change(config):
        config.routes.sort(key=lambda r: order.index(r.name))

    new, _ = saved(tmp_path, HAND_WRITTEN, change)
    assert comment_lines(new) == comment_lines(HAND_WRITTEN)
    assert above(new, "  - name: code") == "  # code requests"
    assert above(new, "  - name: long") == "  # long prompts"
    assert "  - name: default   # catch-all" in new
    assert "    fallback: [small]   # when big is busy" in new
    # the commented-out rule stays below the rule it followed
    assert new.index("# - name: sql") > new.index("- name: code")
    assert new.index("routes:\n  # Rules, first match wins.\n\n") > 0
    assert new.count("\n\n") == HAND_WRITTEN.count("\n\n") and not new.endswith("\n\n")


FLOW_ITEMS = """\
models:
  - {name: a, backend: llama_cpp, path: /a.gguf}
  # about b
  - name: b
    backend: llama_cpp
    path: /b.gguf
routes:
  - name: r1
    target: a
    fallback: [b]
  # below r1

  # r2 itself
  - name: r2
    target: b
    match: {tags: [x]}
  # end of routes
scheduler: {max_queue: 3}
# end of file
"""


def test_comments_after_flow_collections_move_like_the_others(tmp_path):
    # ruamel stores these in other places: above the next item, or at the end of the list
    assert update_yaml_text(FLOW_ITEMS, config_to_dict(load_config_text(FLOW_ITEMS)),
                            config_defaults()) == FLOW_ITEMS

    def reverse(config):
        config.models.reverse()
        config.routes.reverse()

    new, _ = saved(tmp_path, FLOW_ITEMS, reverse)
    assert new == """\
models:
  # about b
  - name: b
    backend: llama_cpp
    path: /b.gguf
  - {name: a, backend: llama_cpp, path: /a.gguf}
routes:
  # r2 itself
  - name: r2
    target: b
    match: {tags: [x]}

  - name: r1
    target: a
    fallback: [b]
  # below r1
  # end of routes
scheduler: {max_queue: 3}
# end of file
"""


def test_a_removed_route_takes_only_its_own_comments(tmp_path):
    new, _ = saved(tmp_path, HAND_WRITTEN, lambda c: c.routes.pop(0))
    assert "code requests" not in new and "when big is busy" not in new
    assert "  # - name: sql\n  #   match: {keywords: [SELECT]}\n" in new
    assert above(new, "  - name: long") == "  # long prompts"


def test_a_removed_key_takes_only_its_own_comment(tmp_path):
    def change(config):
        config.server.api_key = None

    new, _ = saved(tmp_path, HAND_WRITTEN, change)
    assert "api_key" not in new and "shared with the team" not in new
    assert "  port: 8555          # my port\n  # the host stays on loopback\n  host: 127.0.0.1\n" in new


def test_quotes_flow_style_and_single_strings_survive_other_changes(tmp_path):
    text = HAND_WRITTEN.replace("match: {tags: [code]}", "match: {tags: code}")

    def change(config):
        config.models[0].n_ctx = 2048
        config.routes[1].enabled = False

    new, _ = saved(tmp_path, text, change)
    assert '    path: "/m/big.gguf"\n' in new
    assert "    match: {tags: code}\n" in new
    assert "    match:\n      min_prompt_chars: 8000\n    target: big\n    enabled: false\n" in new
    assert "    path: /m/small.gguf\n    n_ctx: 2048\n" in new


def test_a_new_section_goes_below_the_comments_of_the_one_before(tmp_path):
    def change(config):
        config.routes.reverse()
        config.scheduler.max_queue = 5

    new, _ = saved(tmp_path, HAND_WRITTEN, change)
    assert new.endswith("  #   target: big\n\nscheduler:\n  max_queue: 5\n")


def test_defaults_the_file_left_out_stay_out(tmp_path):
    new, _ = saved(tmp_path, HAND_WRITTEN, lambda c: setattr(c.server, "port", 9000))
    assert "port: 9000          # my port" in new
    for key in ("n_ctx: 4096", "enabled", "scheduler", "memory", "idle_ttl_s", "fallback: []"):
        assert key not in new


def test_fields_left_out_of_a_dict_leave_the_file(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(REPO_YAML.read_text())
    data = config_to_dict(load_config(path))
    del data["memory"]
    del data["models"][0]["warmup"]
    save_config_atomic(data, path)
    text = path.read_text()
    assert "\nmemory:" not in text and "warmup" not in text and "sample_hz" not in text
    assert load_config(path) == validate_config(data)[0]
    assert "# f16 | q8_0 | q4_0" in text


def test_the_file_keeps_its_indentation_style(tmp_path):
    plain = dump_config_text(load_config(REPO_YAML))
    assert "\n- name: gemma-270m\n" in plain
    code = RouteConfig(name="code", target="gemma-270m", match=RouteMatch(keywords=["def "]))
    new, _ = saved(tmp_path, plain, lambda c: c.routes.insert(0, code))
    added = "- name: code\n  target: gemma-270m\n  match: {keywords: ['def ']}\n"
    assert new == plain.replace("routes:\n", "routes:\n" + added)


@property_test
@settings(max_examples=examples(60), deadline=None)
@given(text=st.sampled_from(["repo", HAND_WRITTEN, FLOW_ITEMS]), data=st.data())
def test_any_reorder_reads_back_right_and_saves_again_unchanged(text, data):
    text = REPO_YAML.read_text() if text == "repo" else text
    config = load_config_text(text)
    config.models = data.draw(st.permutations(config.models))
    target = config.models[0].name
    routes = [r for r in data.draw(st.permutations(config.routes)) if data.draw(st.booleans())]
    for i in range(data.draw(st.integers(0 if routes else 1, 3))):
        new = RouteConfig(name=f"new{i}", target=target, match=RouteMatch(tags=[f"t{i}"]))
        routes.insert(data.draw(st.integers(0, len(routes))), new)
    removed = len(config.routes) > len([r for r in routes if not r.name.startswith("new")])
    config.routes = routes

    new_text = update_yaml_text(text, config_to_dict(config), config_defaults())
    assert load_config_text(new_text) == config
    assert update_yaml_text(new_text, config_to_dict(config), config_defaults()) == new_text
    if removed:
        assert set(comment_lines(new_text)) <= set(comment_lines(text))
    else:
        assert comment_lines(new_text) == comment_lines(text)


# --- when the file cannot be kept ----------------------------------------------------------------

@pytest.mark.parametrize("old", [None, "models: [\n", "just text\n", "", "\tmodels: 1\n"])
def test_a_missing_or_unparsable_file_gets_the_plain_dump(tmp_path, old):
    path = tmp_path / "models.yaml"
    if old is not None:
        path.write_text(old)
    config = load_config(REPO_YAML)
    save_config_atomic(config, path)
    assert path.read_text() == dump_config_text(config)


def test_an_update_that_would_read_differently_is_not_written(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "update_yaml_text", lambda old, new, defaults: old.replace("8555", "1"))
    new, config = saved(tmp_path, HAND_WRITTEN, lambda c: setattr(c.server, "host", "localhost"))
    assert new == dump_config_text(config)


def test_a_file_that_is_not_a_valid_config_is_still_updated(tmp_path):
    text = HAND_WRITTEN.replace("    target: small\n", "    target: nowhere\n") + "extra: 1  # gone\n"
    path = tmp_path / "models.yaml"
    path.write_text(text)
    config = load_config(REPO_YAML)
    save_config_atomic(config, path)
    new = path.read_text()
    assert load_config(path) == config
    assert "# My gateway." in new and "extra" not in new
