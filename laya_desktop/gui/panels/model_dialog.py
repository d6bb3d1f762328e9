"""Add or edit one registry entry: a GGUF file, an MLX folder or a remote endpoint (an
OpenAI-compatible API or Anthropic's).

OK changes only the fields the user changed: every other field of the entry, shown or not
(sampling, max_output_tokens, embedding, ...), is written back as it was read (registry_edits).
Inspecting a file or folder (metadata and memory estimate) runs in a worker; testing a remote
connection is a request on the GUI thread's event loop, aborted when the dialog closes. A new or
changed MLX folder is accepted only once it was inspected as an MLX model; a name that is already
taken is refused inline. Nothing reaches the engine from here: the panel sends it.
"""
from __future__ import annotations

import copy
import os

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QFrame, QHBoxLayout,
    QLabel, QLineEdit, QPushButton, QScrollArea, QSpinBox, QVBoxLayout, QWidget,
)

from laya_desktop.config.schema import REMOTE_BACKENDS
from laya_desktop.gui.engine_client import remote_model_ids
from laya_desktop.gui.engine_http import Answer, EngineHttp
from laya_desktop.gui.model_inspect import describe_gguf, describe_mlx, inspect_gguf, inspect_mlx
from laya_desktop.gui.registry_edits import merge_edit
from laya_desktop.gui.rules_list import unique_name
from laya_desktop.gui.window_geometry import fit_size
from laya_desktop.gui.workers import WorkerPool

PROBE_TIMEOUT_S = 10.0
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
INT_MAX = 2**31 - 1   # QSpinBox holds a C int
# The engine's (engine/remote_anthropic.py): the GUI imports no engine code.
ANTHROPIC_VERSION = "2023-06-01"

def default_name(path: str, backend: str, taken) -> str:
    """The file or folder name, lower case, made unique; a folder name may hold dots (Qwen2.5-…)."""
    base = os.path.basename(path.rstrip("/\\"))
    if backend == "llama_cpp" and base.lower().endswith(".gguf"):
        base = base[:-len(".gguf")]
    return unique_name(base.lower() or "model", taken)


class ModelDialog(QDialog):
    inspected = Signal(object)                 # (info dict, estimate dict) of the path in the form
    inspect_failed = Signal(str)
    connection_tested = Signal(bool, object)   # ok, model ids or the exception

    def __init__(self, pool: WorkerPool, backend: str, existing: dict | None = None,
                 taken_names: list[str] = (), parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pool = pool
        self.existing = copy.deepcopy(existing) if existing else None
        e = self.existing or {}
        self.backend = e.get("backend", backend)
        self.remote = self.backend in REMOTE_BACKENDS
        self.taken = set(taken_names) - ({e.get("name")} if existing else set())
        self.inspection: tuple[dict, dict] | None = None
        self._inspected_path: str | None = None
        self._inspect_seq = 0
        self._accept_when_inspected = False
        self._probe: EngineHttp | None = None
        self.setWindowTitle(self._title(self.backend, bool(existing)))
        self.setMinimumWidth(520)
        form = QFormLayout()
        self.name = QLineEdit(e.get("name", ""))
        form.addRow(self.tr("Name"), self.name)
        self.info = QLabel("")
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.TextFormat.PlainText)
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        if self.remote:
            self._build_remote(form, e)
        else:
            self._build_local(form, e)
        form.addRow(self.info)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        body = QWidget()
        body.setLayout(form)
        scroll = QScrollArea()   # a tall form scrolls on a small screen instead of squeezing
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(body)
        layout = QVBoxLayout(self)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.buttons)
        want = body.sizeHint()
        want.setHeight(want.height() + self.buttons.sizeHint().height() + 40)
        want.setWidth(max(want.width() + 40, self.minimumWidth()))
        self.resize(fit_size(want, self.screen().availableGeometry()))
        self._shown = self.form_values()   # what OK compares with: the form as it opened

    def _title(self, backend: str, editing: bool) -> str:
        if backend == "llama_cpp":
            return self.tr("Edit GGUF model") if editing else self.tr("Add GGUF model")
        if backend == "mlx":
            return self.tr("Edit MLX model") if editing else self.tr("Add MLX model")
        return self.tr("Edit remote endpoint") if editing else self.tr("Add remote endpoint")

    def _build_remote(self, form: QFormLayout, e: dict) -> None:
        self.backend_box = QComboBox()
        self.backend_box.addItem(self.tr("OpenAI-compatible (chat completions)"), "openai")
        self.backend_box.addItem(self.tr("Anthropic (Messages)"), "anthropic")
        self.backend_box.setCurrentIndex(max(self.backend_box.findData(self.backend), 0))
        self.base_url = QLineEdit(e.get("base_url", DEFAULT_BASE_URLS.get(self.backend, "")))
        self.remote_model = QLineEdit(e.get("remote_model") or "")
        self.key_env = QLineEdit(e.get("api_key_env") or "")
        self.responses = QCheckBox(self.tr("the upstream also has the Responses API "
                                           "(Responses requests pass through)"))
        self.responses.setChecked(bool(e.get("responses", False)))
        form.addRow(self.tr("Backend"), self.backend_box)
        form.addRow(self.tr("Base URL"), self.base_url)
        form.addRow(self.tr("Remote model"), self.remote_model)
        form.addRow(self.tr("Key variable"), self.key_env)
        form.addRow("", self.responses)
        form.addRow("", _button(self.tr("Test connection"), self.test_connection))
        self.backend_box.currentIndexChanged.connect(self._on_remote_backend)
        self._show_remote_backend()

    def _on_remote_backend(self, _index: int) -> None:
        before, self.backend = self.backend, self.backend_box.currentData()
        if self.base_url.text().strip() in ("", DEFAULT_BASE_URLS.get(before)):
            self.base_url.setText(DEFAULT_BASE_URLS[self.backend])
        self._show_remote_backend()

    def _show_remote_backend(self) -> None:
        anthropic = self.backend == "anthropic"
        self.key_env.setPlaceholderText(
            self.tr("environment variable holding the key, e.g. ANTHROPIC_API_KEY") if anthropic
            else self.tr("environment variable holding the key, e.g. OPENAI_API_KEY"))
        self.responses.setVisible(not anthropic)   # Anthropic has Messages only

    def _build_local(self, form: QFormLayout, e: dict) -> None:
        gguf = self.backend == "llama_cpp"
        self.path = QLineEdit(e.get("path", ""))
        self.path.textEdited.connect(self._forget_inspection)
        row = QHBoxLayout()
        row.addWidget(self.path, 1)
        row.addWidget(_button(self.tr("Browse…"), self.browse))
        form.addRow(self.tr("GGUF file") if gguf else self.tr("MLX folder"), row)
        self.n_ctx = _spin(16, INT_MAX, e.get("n_ctx", 4096))
        self.parallel = _spin(1, INT_MAX, e.get("parallel") or (4 if gguf else 1))
        self.idle_ttl = _spin(0, INT_MAX, e.get("idle_ttl_s", 900))
        self.pinned = QCheckBox(self.tr("keep in memory (pinned)"))
        self.pinned.setChecked(bool(e.get("keep_in_memory", False)))
        self.warmup = QCheckBox(self.tr("load when the engine starts"))
        self.warmup.setChecked(bool(e.get("warmup", False)))
        form.addRow(self.tr("Context (tokens/seq)"), self.n_ctx)
        form.addRow(self.tr("Parallel sequences"), self.parallel)
        for spin in (self.n_ctx, self.parallel):
            spin.editingFinished.connect(self._reinspect)
        if gguf:
            self.gpu_layers = _spin(-1, INT_MAX, e.get("n_gpu_layers", 0))
            self.kv_type = QComboBox()
            self.kv_type.addItems(["f16", "q8_0", "q4_0"])
            self.kv_type.setCurrentText(e.get("kv_cache_type", "f16"))
            self.kv_type.currentTextChanged.connect(self._reinspect)
            form.addRow(self.tr("GPU layers (-1 all)"), self.gpu_layers)
            form.addRow(self.tr("KV cache type"), self.kv_type)
            self.repack = QCheckBox(self.tr("repack weights for the CPU (faster batches; a greedy "
                                            "answer then depends on the load)"))
            self.repack.setChecked(bool(e.get("cpu_repack", True)))
            form.addRow("", self.repack)
        form.addRow("", _button(self.tr("Inspect"), self.inspect))
        form.addRow(self.tr("Idle TTL (s, 0 never)"), self.idle_ttl)
        form.addRow("", self.pinned)
        form.addRow("", self.warmup)

    # --- a file or folder ----------------------------------------------------------------------
    def browse(self) -> None:
        if self.backend == "llama_cpp":
            path, _ = QFileDialog.getOpenFileName(self, self.tr("GGUF model"), "",
                                                  self.tr("GGUF models (*.gguf)"))
        else:
            path = QFileDialog.getExistingDirectory(self, self.tr("MLX model folder"))
        if path:
            self.use_path(path)

    def use_path(self, path: str) -> None:
        """What Browse does with the chosen file or folder: fill the form and inspect it."""
        self.path.setText(path)
        if not self.name.text().strip():
            self.name.setText(default_name(path, self.backend, self.taken))
        self.inspect()

    def inspect(self) -> None:
        path = self.path.text().strip()
        self._forget_inspection()
        seq = self._inspect_seq
        if self.backend == "llama_cpp":
            self.info.setText(self.tr("reading the GGUF header…"))
            args = (inspect_gguf, path, self.n_ctx.value(), self.parallel.value(),
                    self.kv_type.currentText())
        else:
            self.info.setText(self.tr("reading the MLX folder…"))
            args = (inspect_mlx, path, self.n_ctx.value(), self.parallel.value())
        self.pool.submit(*args, returned=lambda result: self._show_inspection(seq, path, result),
                         errored=lambda exc: self._show_inspect_error(seq, exc))

    def _forget_inspection(self, *_args) -> None:
        self._inspect_seq += 1   # results still on their way describe another path or setting
        self.inspection = self._inspected_path = None

    def _reinspect(self, *_args) -> None:
        if self.inspection is not None:
            self.inspect()

    def _show_inspection(self, seq: int, path: str, result: tuple[dict, dict]) -> None:
        if seq != self._inspect_seq:
            return
        self.inspection, self._inspected_path = result, path
        describe = describe_gguf if self.backend == "llama_cpp" else describe_mlx
        self.info.setText(describe(*result))
        self.inspected.emit(result)
        if self._accept_when_inspected:
            self._accept_when_inspected = False
            self._accept()

    def _show_inspect_error(self, seq: int, exc: Exception) -> None:
        if seq != self._inspect_seq:
            return
        self._accept_when_inspected = False
        if self.backend == "llama_cpp":
            self.info.setText(self.tr("cannot use this file: {error}").format(error=exc))
        else:
            self.info.setText(self.tr("cannot use this folder: {error}").format(error=exc))
        self.inspect_failed.emit(str(exc))

    # --- a remote endpoint ---------------------------------------------------------------------
    def test_connection(self) -> None:
        self._abort_probe()
        key = os.environ.get(self.key_env.text().strip()) if self.key_env.text().strip() else None
        root = self.base_url.text().strip().rstrip("/")
        if self.backend == "anthropic":
            headers = {"anthropic-version": ANTHROPIC_VERSION, **({"x-api-key": key} if key else {})}
            root = root if root.endswith("/v1") else root + "/v1"   # as the engine's api_root
        else:
            headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._probe = probe = EngineHttp(root, headers, system_proxy=True, parent=self)
        self.info.setText(self.tr("connecting…"))
        probe.fetch("GET", "/models", None, PROBE_TIMEOUT_S,
                    lambda outcome: self._show_remote(probe, outcome))

    @property
    def probing(self) -> bool:
        return self._probe is not None

    def _abort_probe(self) -> None:
        """Its answer is dropped: it no longer is `self._probe`."""
        probe, self._probe = self._probe, None
        if probe is not None:
            probe.abort()
            probe.deleteLater()

    def _show_remote(self, probe: EngineHttp, outcome: Answer | Exception) -> None:
        if probe is not self._probe:
            return
        self._probe = None
        probe.deleteLater()
        try:
            if isinstance(outcome, Exception):
                raise outcome
            ids = remote_model_ids(outcome)
        except Exception as exc:  # noqa: BLE001 - any failure is the test's answer
            self.info.setText(self.tr("connection failed: {error}").format(error=exc))
            self.connection_tested.emit(False, exc)
            return
        self.info.setText(self.tr("OK: {n} models").format(n=len(ids))
                          + (f" ({', '.join(ids[:8])})" if ids else ""))
        self.connection_tested.emit(True, ids)

    # --- OK ------------------------------------------------------------------------------------
    def refusal(self, entry: dict) -> str | None:
        if not entry["name"]:
            return self.tr("a name is required")
        if entry["name"] in self.taken:
            return self.tr("a model named '{name}' already exists: choose another name").format(
                name=entry["name"])
        return None

    def _accept(self) -> None:
        entry = self.entry()
        problem = self.refusal(entry)
        if problem:
            self.info.setText(problem)
        elif self._needs_inspection(entry):
            self._accept_when_inspected = True   # OK again once the folder proved to be MLX
            self.inspect()
        else:
            self.accept()

    def _needs_inspection(self, entry: dict) -> bool:
        """A new or changed MLX folder; the one an edited entry already had was accepted then."""
        path = entry.get("path")
        return (self.backend == "mlx" and path != (self.existing or {}).get("path")
                and self._inspected_path != path)

    def done(self, result: int) -> None:
        self._abort_probe()
        self._forget_inspection()
        super().done(result)

    def form_values(self) -> dict:
        """What the form holds now, as entry fields; None for a field left empty."""
        values: dict = {"name": self.name.text().strip(), "backend": self.backend}
        if self.remote:
            values.update(base_url=self.base_url.text().strip(),
                          remote_model=self.remote_model.text().strip() or None,
                          api_key_env=self.key_env.text().strip() or None)
            if self.backend == "openai":
                values["responses"] = self.responses.isChecked()
            return values
        values.update(path=self.path.text().strip(), n_ctx=self.n_ctx.value(),
                      parallel=self.parallel.value(), keep_in_memory=self.pinned.isChecked(),
                      idle_ttl_s=self.idle_ttl.value(), warmup=self.warmup.isChecked())
        if self.backend == "llama_cpp":
            values.update(n_gpu_layers=self.gpu_layers.value(),
                          kv_cache_type=self.kv_type.currentText(),
                          cpu_repack=self.repack.isChecked())
        return values

    def entry(self) -> dict:
        """An edit: the entry as read with the fields the user changed. A new entry: the form,
        without a `responses: false` no one asked for."""
        now = self.form_values()
        if self.existing is not None:
            return merge_edit(self.existing, self._shown, now)
        if not now.get("responses", True):
            del now["responses"]
        return {k: v for k, v in now.items() if v is not None}


def _button(label: str, slot) -> QPushButton:
    button = QPushButton(label)
    button.clicked.connect(slot)
    return button


def _spin(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(int(value))
    return box
