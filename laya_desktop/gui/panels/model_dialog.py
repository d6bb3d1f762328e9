"""Add or edit one registry entry: a GGUF file, an MLX folder or a remote OpenAI-compatible endpoint.

Inspecting a GGUF (metadata and memory estimate) and testing a remote connection run in workers.
"""
from __future__ import annotations

from types import MappingProxyType

import dataclasses
import os

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout,
    QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget,
)

from laya_desktop.gui.engine_client import probe_remote
from laya_desktop.gui.registry_model import fmt_bytes
from laya_desktop.gui.workers import WorkerPool

TITLES = MappingProxyType({"llama_cpp": "GGUF model", "mlx": "MLX model", "openai": "Remote endpoint"})


def _plain(obj) -> dict:
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return obj
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def inspect_gguf(path: str, n_ctx: int, parallel: int, kv_cache_type: str) -> tuple[dict, dict]:
    """Worker body: GGUF metadata and the memory estimate for these settings."""
    from laya_desktop.engine.memory_estimate import estimate_memory
    from laya_desktop.runners.builtin import resolve_model_path
    from laya_desktop.runners.gguf_info import read_gguf_info

    info = read_gguf_info(str(resolve_model_path(path)))  # builtin:NAME may assemble its file
    estimate = estimate_memory(info, n_ctx, parallel, kv_cache_type)
    return _plain(info), _plain(estimate)


def describe_gguf(info: dict, estimate: dict) -> str:
    def pick(d: dict, *keys):
        for k in keys:
            if d.get(k) not in (None, ""):
                return d[k]
        return "?"
    params = pick(info, "parameters", "n_params", "parameter_count", "params")
    if isinstance(params, (int, float)):
        params = f"{params / 1e9:.2f} B" if params >= 1e9 else f"{params / 1e6:.0f} M"
    lines = [f"Architecture: {pick(info, 'architecture', 'arch')}",
             f"Parameters: {params}",
             f"Quantization: {pick(info, 'quantization', 'file_type', 'quant')}",
             f"Context length: {pick(info, 'context_length', 'n_ctx_train')}"]
    total = pick(estimate, "total_bytes", "total")
    parts = [f"{k} {fmt_bytes(estimate[k + '_bytes'])}" for k in ("weights", "kv", "compute", "overhead")
             if isinstance(estimate.get(k + "_bytes"), (int, float))]
    if estimate.get("vram_bytes"):
        parts.append(f"VRAM {fmt_bytes(estimate['vram_bytes'])}")
    lines.append(f"Memory estimate: {fmt_bytes(total) if isinstance(total, (int, float)) else total}"
                 + (f" ({', '.join(parts)})" if parts else ""))
    return "\n".join(lines)


class ModelDialog(QDialog):
    inspected = Signal(object)                 # (info dict, estimate dict)
    connection_tested = Signal(bool, object)   # ok, model ids or the exception
    def __init__(self, pool: WorkerPool, backend: str, existing: dict | None = None,
                 taken_names: list[str] = (), parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pool, self.backend = pool, backend
        self.taken = set(taken_names) - ({existing.get("name")} if existing else set())
        self.setWindowTitle(("Edit " if existing else "Add ") + TITLES[backend])
        self.setMinimumWidth(520)
        e = existing or {}
        form = QFormLayout()
        self.name = QLineEdit(e.get("name", ""))
        form.addRow("Name", self.name)
        self.inspection: tuple[dict, dict] | None = None
        self.info = QLabel("")
        self.info.setWordWrap(True)
        if backend == "openai":
            self.base_url = QLineEdit(e.get("base_url", "https://api.openai.com/v1"))
            self.remote_model = QLineEdit(e.get("remote_model", ""))
            self.key_env = QLineEdit(e.get("api_key_env") or "")
            self.key_env.setPlaceholderText("environment variable holding the key, e.g. OPENAI_API_KEY")
            test = QPushButton("Test connection")
            test.clicked.connect(self.test_connection)
            form.addRow("Base URL", self.base_url)
            form.addRow("Remote model", self.remote_model)
            form.addRow("Key variable", self.key_env)
            form.addRow("", test)
        else:
            self.path = QLineEdit(e.get("path", ""))
            browse = QPushButton("Browse…")
            browse.clicked.connect(self.browse)
            row = QHBoxLayout()
            row.addWidget(self.path, 1)
            row.addWidget(browse)
            form.addRow("GGUF file" if backend == "llama_cpp" else "MLX folder", row)
            self.n_ctx = _spin(256, 1 << 20, e.get("n_ctx", 4096))
            self.parallel = _spin(1, 256, e.get("parallel") or (4 if backend == "llama_cpp" else 1))
            self.idle_ttl = _spin(0, 7 * 86400, e.get("idle_ttl_s", 900))
            self.pinned = QCheckBox("keep in memory (pinned)")
            self.pinned.setChecked(bool(e.get("keep_in_memory", False)))
            self.warmup = QCheckBox("load when the engine starts")
            self.warmup.setChecked(bool(e.get("warmup", False)))
            form.addRow("Context (tokens/seq)", self.n_ctx)
            form.addRow("Parallel sequences", self.parallel)
            if backend == "llama_cpp":
                self.gpu_layers = _spin(-1, 1000, e.get("n_gpu_layers", 0))
                self.kv_type = QComboBox()
                self.kv_type.addItems(["f16", "q8_0", "q4_0"])
                self.kv_type.setCurrentText(e.get("kv_cache_type", "f16"))
                form.addRow("GPU layers (-1 all)", self.gpu_layers)
                form.addRow("KV cache type", self.kv_type)
                inspect = QPushButton("Inspect")
                inspect.clicked.connect(self.inspect)
                form.addRow("", inspect)
            form.addRow("Idle TTL (s, 0 never)", self.idle_ttl)
            form.addRow("", self.pinned)
            form.addRow("", self.warmup)
        form.addRow(self.info)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)

    # --- actions -------------------------------------------------------------------------------
    def browse(self) -> None:
        if self.backend == "llama_cpp":
            path, _ = QFileDialog.getOpenFileName(self, "GGUF model", "", "GGUF models (*.gguf)")
        else:
            path = QFileDialog.getExistingDirectory(self, "MLX model folder")
        if path:
            self.path.setText(path)
            if not self.name.text():
                self.name.setText(os.path.splitext(os.path.basename(path.rstrip("/")))[0].lower())
            if self.backend == "llama_cpp":
                self.inspect()

    def inspect(self) -> None:
        path = self.path.text().strip()
        self.info.setText("reading the GGUF header…")
        self.pool.submit(inspect_gguf, path, self.n_ctx.value(), self.parallel.value(),
                         self.kv_type.currentText(),
                         returned=self._show_inspection,
                         errored=lambda exc: self.info.setText(f"cannot inspect: {exc}"))

    def _show_inspection(self, result: tuple[dict, dict]) -> None:
        self.inspection = result
        self.info.setText(describe_gguf(*result))
        self.inspected.emit(result)

    def test_connection(self) -> None:
        key = os.environ.get(self.key_env.text().strip()) if self.key_env.text().strip() else None
        self.info.setText("connecting…")
        self.pool.submit(probe_remote, self.base_url.text().strip(), key,
                         returned=self._show_remote_models, errored=self._show_remote_error)

    def _show_remote_models(self, ids: list[str]) -> None:
        self.info.setText(f"OK: {len(ids)} models" + (f" ({', '.join(ids[:8])})" if ids else ""))
        self.connection_tested.emit(True, ids)

    def _show_remote_error(self, exc: Exception) -> None:
        self.info.setText(f"connection failed: {exc}")
        self.connection_tested.emit(False, exc)

    def _accept(self) -> None:
        entry = self.entry()
        if not entry["name"]:
            self.info.setText("a name is required")
        elif entry["name"] in self.taken:
            self.info.setText(f"a model named '{entry['name']}' already exists")
        else:
            self.accept()

    def entry(self) -> dict:
        entry: dict = {"name": self.name.text().strip(), "backend": self.backend}
        if self.backend == "openai":
            entry["base_url"] = self.base_url.text().strip()
            if self.remote_model.text().strip():
                entry["remote_model"] = self.remote_model.text().strip()
            if self.key_env.text().strip():
                entry["api_key_env"] = self.key_env.text().strip()
            return entry
        entry.update(path=self.path.text().strip(), n_ctx=self.n_ctx.value(),
                     parallel=self.parallel.value(), keep_in_memory=self.pinned.isChecked(),
                     idle_ttl_s=self.idle_ttl.value(), warmup=self.warmup.isChecked())
        if self.backend == "llama_cpp":
            entry.update(n_gpu_layers=self.gpu_layers.value(), kv_cache_type=self.kv_type.currentText())
        return entry


def _spin(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(int(value))
    return box
