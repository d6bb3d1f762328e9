"""The Models dialog writes back what it read: open → OK on any valid entry of any backend, through
the panel's replace path, leaves the config as it was, fields the dialog does not show included;
an edit changes that one field; an `anthropic` remote is added and edited in the remote form; a
rename takes every rule's reference along.

The panel here sends to a recording stand-in for the engine (the apply call); test_model_dialog_engine.py
does the same against a real engine and the file on disk."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from PySide6.QtWidgets import QDialogButtonBox

from laya_desktop.config.sampling import KNOBS
from laya_desktop.config.schema import BACKENDS, KV_CACHE_TYPES
from laya_desktop.config.store import config_to_dict, parse_config_text
from laya_desktop.config.validate import MODEL_FIELDS, MODEL_REQUIRED, validate_config
from laya_desktop.gui.engine_state import EngineState
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.panels.models_panel import ModelsPanel
from laya_desktop.gui.registry_edits import rename_references, replace_model
from laya_desktop.gui.workers import WorkerPool
from property_budget import examples, property_test

REPO = Path(__file__).resolve().parents[2]
CONFIG_FILES = ("models.yaml", "docs/demo-models.yaml", "laya_desktop/config/default_models.yaml")


def uncomment_examples(text: str) -> str:
    """models.yaml with its commented-out example models and rules live: each block from a
    `  # - name:` line to the next line that is no deeper-indented example line."""
    lines, inside = [], False
    for line in text.splitlines():
        m = re.match(r"^(  )# (- name: .*|  +\S.*)$", line)
        inside = bool(m) and (inside or m.group(2).startswith("- name:"))
        lines.append(m.group(1) + m.group(2) if inside else line)
    return "\n".join(lines) + "\n"


def shipped_configs() -> list[tuple[str, str]]:
    texts = [(name, (REPO / name).read_text()) for name in CONFIG_FILES]
    return texts + [("models.yaml examples", uncomment_examples(texts[0][1]))]


def shipped_cases() -> list:
    """(config as the file holds it, as the engine answers GET /admin/config) for each model."""
    cases = []
    for label, text in shipped_configs():
        parsed, errors = parse_config_text(text)
        assert errors == [], (label, errors)
        for view, config in (("file", yaml.safe_load(text)), ("engine", config_to_dict(parsed))):
            for model in config["models"]:
                cases.append(pytest.param(config, model["name"], id=f"{label}:{view}:{model['name']}"))
    return cases


class RecordingDocument(EngineState):
    """The panel's document with the PUT replaced by a record of the config it would send."""

    def __init__(self, client) -> None:
        super().__init__(client)
        self.sent: list[dict] = []

    def apply(self, config, on_done=None, **_revision) -> None:
        self.sent.append(copy.deepcopy(config))


@pytest.fixture(scope="module")
def panel(qapp):
    pool = WorkerPool()
    client = EngineClient("http://127.0.0.1:9")   # never called: the document records instead
    doc = RecordingDocument(client)
    panel = ModelsPanel(pool, doc)
    yield panel
    panel.deleteLater()
    assert pool.shutdown(5000)
    client.close()


def open_entry(panel, config: dict, name: str):
    """The config as the panel holds it, the named row selected, and its dialog open (Edit…)."""
    panel.doc.applied = copy.deepcopy(config)
    panel.doc.sent.clear()
    panel.model.set_configs(panel.doc.applied["models"])
    names = [m["name"] for m in config["models"]]
    panel.table.selectRow(names.index(name))
    dialog = panel.edit_selected()
    assert dialog is not None and dialog.isVisible()
    return dialog


def press_ok(panel, dialog) -> dict:
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    assert not dialog.isVisible(), dialog.info.text()
    assert len(panel.doc.sent) == 1
    return panel.doc.sent[0]


def model_named(config: dict, name: str) -> dict:
    return next(m for m in config["models"] if m["name"] == name)


@pytest.mark.parametrize(("config", "name"), shipped_cases())
def test_open_then_ok_on_every_shipped_model_changes_nothing(panel, config, name):
    dialog = open_entry(panel, config, name)
    remote = model_named(config, name)["backend"] in ("openai", "anthropic")
    assert dialog.remote is remote   # an anthropic entry opens the remote form, not the local one
    assert press_ok(panel, dialog) == config


@pytest.mark.parametrize(("config", "name"), shipped_cases())
def test_editing_one_field_keeps_every_other(panel, config, name):
    dialog = open_entry(panel, config, name)
    before = model_named(config, name)
    if dialog.remote:
        dialog.remote_model.setText("another-model")
        expected = {**before, "remote_model": "another-model"}
    else:
        dialog.n_ctx.setValue(dialog.n_ctx.value() + 16)
        expected = {**before, "n_ctx": dialog.n_ctx.value()}
    sent = press_ok(panel, dialog)
    assert model_named(sent, name) == expected
    assert {k: v for k, v in sent.items() if k != "models"} == \
        {k: v for k, v in config.items() if k != "models"}


# --- hypothesis: any valid entry of any backend, built from the schema's fields --------------
NAMES = st.from_regex(r"[a-z][a-z0-9._-]{0,15}", fullmatch=True)
TEXT = st.text(min_size=1, max_size=24)


def _knob_value(knob):
    if knob.integer:
        return st.integers(int(knob.low), int(knob.high) if knob.high is not None else 10**6)
    return st.floats(knob.low, knob.high if knob.high is not None else 1e6, allow_nan=False)


def _sampling(backend: str):
    knobs = [k for k in KNOBS.values() if backend in k.backends]
    return st.fixed_dictionaries({}, optional={k.name: _knob_value(k) for k in knobs})


def _value(key: str, spec, backend: str):
    """Values for one field: the known ones by hand, any other by its kind, checked below."""
    special = {
        "path": (st.builds(lambda t: f"builtin:{t}", NAMES)
                 | st.builds(lambda t: f"/models/{t}.gguf", TEXT)) if backend == "llama_cpp"
        else st.builds(lambda t: f"/models/{t}", TEXT),
        "base_url": st.builds(lambda host, v1: f"https://{host}.example{'/v1' if v1 else ''}",
                              NAMES, st.booleans()),
        "api_key_env": st.sampled_from(["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CLOUD_API_KEY"])
        | st.from_regex(r"LAYA_[A-Z0-9]{1,12}_KEY", fullmatch=True),   # never LAYA_APP_TOKEN
        "kv_cache_type": st.sampled_from(KV_CACHE_TYPES),
        "sampling": _sampling(backend),
    }
    if key in special:
        values = special[key]
    else:
        values = {"int": st.integers(-2, 2**31 - 1) | st.integers(-2, 70000),
                  "number": st.floats(-1, 1e6, allow_nan=False), "bool": st.booleans(),
                  "str": TEXT, "str_list": st.lists(TEXT, max_size=3),
                  "mapping": st.just({})}[spec.kind]
    return st.none() | values if spec.nullable else values


@st.composite
def valid_entries(draw, backend: str) -> dict:
    fields = {k: s for k, (s, applies) in MODEL_FIELDS.items()
              if backend in applies and k not in ("name", "backend")}
    required = {k for k, applies in MODEL_REQUIRED.items() if backend in applies} - {"name", "backend"}
    entry = {"name": draw(NAMES), "backend": backend}
    for key, spec in fields.items():
        if key in required or draw(st.booleans()):
            entry[key] = draw(_value(key, spec, backend))
    # what the validator refuses (a check the strategies above do not know) is left out
    for _ in range(len(entry)):
        errors = validate_config({"models": [entry], "routes": [{"name": "r", "target": entry["name"]}]})[1]
        bad = {e.path.split(".")[1] for e in errors if e.path.startswith("models[0].")}
        if not bad - required:
            break
        entry = {k: v for k, v in entry.items() if k not in bad - required}
    assume(not validate_config({"models": [entry], "routes": [{"name": "r", "target": entry["name"]}]})[1])
    return entry


@st.composite
def configs_with_one_entry(draw):
    backend = draw(st.sampled_from(BACKENDS))
    entry = draw(valid_entries(backend))
    other = {"name": "other-" + entry["name"], "backend": "llama_cpp", "path": "builtin:gemma-3-270m"}
    config = {"models": [other, entry],
              "routes": [{"name": "r", "target": entry["name"], "fallback": [other["name"]]}]}
    if draw(st.booleans()):    # as the engine answers GET /admin/config: defaults spelled out
        config = config_to_dict(validate_config(config)[0])
    return config, entry["name"]


@property_test
@settings(max_examples=examples(200), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(configs_with_one_entry())
def test_open_then_ok_on_any_valid_entry_changes_nothing(panel, case):
    config, name = case
    dialog = open_entry(panel, config, name)
    assert press_ok(panel, dialog) == config


def edit_one_field(dialog, key: str):
    """Change the form's field for `key` as a user would; the value the entry should then hold."""
    checks = {"keep_in_memory": "pinned", "warmup": "warmup", "cpu_repack": "repack",
              "responses": "responses"}
    spins = {"n_ctx": "n_ctx", "parallel": "parallel", "idle_ttl_s": "idle_ttl",
             "n_gpu_layers": "gpu_layers"}
    if key in checks:
        box = getattr(dialog, checks[key])
        box.setChecked(not box.isChecked())
        return box.isChecked()
    if key in spins:
        spin = getattr(dialog, spins[key])
        spin.setValue(spin.value() + 1 if spin.value() < spin.maximum() else spin.value() - 1)
        return spin.value()
    if key == "kv_cache_type":
        dialog.kv_type.setCurrentText(next(t for t in KV_CACHE_TYPES if t != dialog.kv_type.currentText()))
        return dialog.kv_type.currentText()
    edit = {"path": "path", "base_url": "base_url", "remote_model": "remote_model",
            "api_key_env": "key_env"}[key]
    value = {"path": "builtin:edited", "base_url": "https://edited.example/v1",
             "remote_model": "edited-model", "api_key_env": "LAYA_EDITED_KEY"}[key]
    getattr(dialog, edit).setText(value)
    return value


@property_test
@settings(max_examples=examples(200), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(configs_with_one_entry(), st.data())
def test_an_edit_of_any_shown_field_keeps_every_other(panel, case, data):
    config, name = case
    dialog = open_entry(panel, config, name)
    keys = [k for k in dialog.form_values() if k not in ("name", "backend")
            and not (k == "path" and dialog.backend == "mlx")]   # a new folder is inspected first
    key = data.draw(st.sampled_from(keys))
    value = edit_one_field(dialog, key)
    sent = press_ok(panel, dialog)
    assert model_named(sent, name) == {**model_named(config, name), key: value}
    assert [m for m in sent["models"] if m["name"] != name] == \
        [m for m in config["models"] if m["name"] != name]
    assert sent["routes"] == config["routes"]


def test_every_backend_and_unshown_field_is_walked():
    """The shipped and example configs hold each backend and the fields no form shows."""
    seen_backends, seen_fields = set(), set()
    for _label, text in shipped_configs():
        for model in yaml.safe_load(text)["models"]:
            seen_backends.add(model["backend"])
            seen_fields |= set(model)
    assert seen_backends == set(BACKENDS)
    assert {"sampling", "max_output_tokens", "embedding", "n_threads", "chat_format",
            "responses"} <= seen_fields


# --- anthropic in the remote form, and Pin --------------------------------------------------
BASE = {"models": [{"name": "local", "backend": "llama_cpp", "path": "builtin:gemma-3-270m"}],
        "routes": [{"name": "default", "target": "local"}]}


def test_an_anthropic_remote_is_added_in_the_remote_form(panel):
    panel.doc.applied = copy.deepcopy(BASE)
    panel.doc.sent.clear()
    dialog = panel.open_dialog("openai")
    assert dialog.remote and dialog.base_url.text() == "https://api.openai.com/v1"
    dialog.backend_box.setCurrentIndex(dialog.backend_box.findData("anthropic"))
    assert dialog.base_url.text() == "https://api.anthropic.com"   # the default follows the choice
    assert not dialog.responses.isVisibleTo(dialog)               # Messages only
    dialog.name.setText("claude")
    dialog.remote_model.setText("claude-sonnet-4-5")
    dialog.key_env.setText("ANTHROPIC_API_KEY")
    sent = press_ok(panel, dialog)
    entry = {"name": "claude", "backend": "anthropic", "base_url": "https://api.anthropic.com",
             "remote_model": "claude-sonnet-4-5", "api_key_env": "ANTHROPIC_API_KEY"}
    assert sent["models"][-1] == entry
    assert validate_config(sent)[1] == []


def test_the_registry_shows_an_anthropic_model_as_a_remote(panel):
    config = copy.deepcopy(BASE)
    config["models"].append({"name": "claude", "backend": "anthropic",
                             "base_url": "https://api.anthropic.com", "remote_model": "claude-x"})
    panel.model.set_configs(config["models"])
    table = panel.model
    assert table.data(table.index(1, 2)) == "remote" and table.data(table.index(0, 2)) == "unloaded"
    from laya_desktop.gui.registry_model import COLUMNS
    source = COLUMNS.index("Source")
    assert table.data(table.index(1, source)) == "https://api.anthropic.com (claude-x)"


def test_switching_a_remote_backend_drops_what_no_longer_applies(panel):
    config = copy.deepcopy(BASE)
    config["models"].append({"name": "cloud", "backend": "openai", "base_url": "https://api.openai.com/v1",
                             "api_key_env": "OPENAI_API_KEY", "responses": True})
    dialog = open_entry(panel, config, "cloud")
    dialog.backend_box.setCurrentIndex(dialog.backend_box.findData("anthropic"))
    sent = press_ok(panel, dialog)
    assert model_named(sent, "cloud") == {"name": "cloud", "backend": "anthropic",
                                          "base_url": "https://api.anthropic.com",
                                          "api_key_env": "OPENAI_API_KEY"}
    assert validate_config(sent)[1] == []


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_pin_refuses_a_remote_and_sends_nothing(panel, backend):
    config = copy.deepcopy(BASE)
    config["models"].append({"name": "far", "backend": backend, "base_url": "https://x.example/v1"})
    panel.doc.applied, results = config, []
    panel.doc.sent.clear()
    panel.action_done.connect(lambda *args: results.append(args))
    try:
        panel.toggle_pin("far")
    finally:
        panel.action_done.disconnect()
    assert panel.doc.sent == [] and results and results[0][:2] == ("pin", False)
    assert "remote" in panel.status.text()
    panel.toggle_pin("local")
    assert model_named(panel.doc.sent[0], "local")["keep_in_memory"] is True


# --- rename ----------------------------------------------------------------------------------
RENAME_CONFIG = {
    "models": [{"name": "a", "backend": "llama_cpp", "path": "builtin:gemma-3-270m"},
               {"name": "b", "backend": "llama_cpp", "path": "builtin:gemma-3-270m"}],
    "routes": [
        {"name": "one", "target": "a", "fallback": ["b", "a"], "match": {"model": ["a"]}},
        {"name": "two", "targets": ["b", "a"], "strategy": "least_loaded"},
        {"name": "three", "target": "a", "targets": [{"model": "a", "weight": 2}, {"model": "b", "weight": 1}],
         "strategy": "weighted", "fallback": ["a"]},
        {"name": "four", "targets": [{"model": "a", "max_active": 2}, "b"], "strategy": "spillover"},
    ],
}


def test_a_rename_in_the_dialog_rewires_every_reference(panel):
    assert validate_config(RENAME_CONFIG)[1] == []
    dialog = open_entry(panel, RENAME_CONFIG, "a")
    dialog.name.setText("a2")
    sent = press_ok(panel, dialog)
    assert [m["name"] for m in sent["models"]] == ["a2", "b"]
    assert sent["routes"] == [
        {"name": "one", "target": "a2", "fallback": ["b", "a2"], "match": {"model": ["a"]}},
        {"name": "two", "targets": ["b", "a2"], "strategy": "least_loaded"},
        {"name": "three", "target": "a2", "targets": [{"model": "a2", "weight": 2}, {"model": "b", "weight": 1}],
         "strategy": "weighted", "fallback": ["a2"]},
        {"name": "four", "targets": [{"model": "a2", "max_active": 2}, "b"], "strategy": "spillover"},
    ]
    assert validate_config(sent)[1] == []


def test_rename_references_leaves_other_names_and_client_aliases_alone():
    config = copy.deepcopy(RENAME_CONFIG)
    rename_references(config, "zzz", "yyy")
    assert config == RENAME_CONFIG
    renamed = replace_model(RENAME_CONFIG, "b", {**RENAME_CONFIG["models"][1], "name": "bee"})
    assert renamed["routes"][0]["match"] == {"model": ["a"]}     # what clients ask for, not a model
    assert renamed["routes"][1]["targets"] == ["bee", "a"]
    assert RENAME_CONFIG["routes"][1]["targets"] == ["b", "a"]     # the input is not changed
    assert validate_config(renamed)[1] == []
