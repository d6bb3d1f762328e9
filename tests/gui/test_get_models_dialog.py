"""Get models… against a local hub (tests/fake_hub.py, HF_ENDPOINT) and a real engine: search,
a repository's quantizations with sizes and Laya's fit verdicts, a download with progress that
outlives the dialog and lands in models.yaml, "Use for rule…", cancel, a gated repository, an
unreachable hub with Add GGUF one click away, and a download an earlier run left unfinished."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from conftest import engine_processes, free_port, gui_config, start_window, write_config
from fake_hub import FakeHub, go_online

TINY = "acme/tiny-GGUF"
LOCKED = "acme/locked-GGUF"
SLOW = "acme/slow-GGUF"
LATER = "acme/later-GGUF"
# huggingface_hub reports a transfer's progress per 10 MiB read (DOWNLOAD_CHUNK_SIZE); a file of
# 21 MiB stalled at 15 shows a progress between 0 and 100 %.
BIG_PADDING = 21 << 20
STALL_AT = 15 << 20


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hub-models")


@pytest.fixture(scope="module")
def window(qapp, gui_tiny_gguf, models_dir, tmp_path_factory):
    """The app with its own engine; its downloads go to `models_dir` (read when the first
    config arrives, so the variable is set before the window starts)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LAYA_MODELS_DIR", str(models_dir))
        port = free_port()
        path = write_config(tmp_path_factory.mktemp("get-models"), gui_config(gui_tiny_gguf, port))
        win = start_window(qapp, path, port)
        win.config_file = path   # for the tests: what the engine saved
        yield win
        win.close()
        assert engine_processes(path) == []


@pytest.fixture
def hub(monkeypatch, tmp_path, gui_tiny_gguf):
    import huggingface_hub.constants as hf_constants
    data = gui_tiny_gguf.read_bytes()
    big = data + bytes(BIG_PADDING)   # progress moves per client chunk: room for a few
    server = FakeHub().start()
    server.add_repo(TINY, {"tiny-Q8_0.gguf": big, "tiny-F16.gguf": data + b"\0" * 4096,
                           "README.md": b"# tiny"}, downloads=1200, license="apache-2.0")
    server.add_repo(LOCKED, {"locked-Q4_K_M.gguf": data}, gated=True, token="secret",
                    license="llama3", downloads=5)
    server.add_repo(SLOW, {"slow-Q4_K_M.gguf": big})
    server.add_repo(LATER, {"later-Q5_K_M.gguf": data})
    go_online(monkeypatch)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    # no token saved by `hf auth login` on this machine may open the gated repository
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(hf_constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"))
    server.data, server.big = data, big
    yield server
    server.stop()


def open_dialog(window):
    panel = window.panel("models")
    window.tabs.setCurrentWidget(panel)
    return panel, panel.open_get_models()


def search(qtbot, dialog, text: str) -> list[str]:
    dialog.query.setText(text)
    dialog.search_btn.click()
    qtbot.waitUntil(lambda: dialog.search_btn.isEnabled() and dialog.results.rowCount() > 0,
                    timeout=15000)
    return [dialog.results.item(r, 0).text() for r in range(dialog.results.rowCount())]


def open_repo(qtbot, dialog, repo_id: str) -> None:
    row = [dialog.results.item(r, 0).text() for r in range(dialog.results.rowCount())].index(repo_id)
    dialog.results.selectRow(row)
    qtbot.waitUntil(lambda: dialog.repo is not None and dialog.repo.repo_id == repo_id,
                    timeout=15000)


def verdicts(dialog) -> list[str]:
    return [dialog.files.item(r, 3).text() for r in range(dialog.files.rowCount())]


def wait_for_estimates(qtbot, dialog) -> None:
    qtbot.waitUntil(lambda: dialog.fits and all(f is not None for f in dialog.fits), timeout=15000)


def select_quant(dialog, quant: str) -> None:
    dialog.files.selectRow([c.quant for c in dialog.repo.choices].index(quant))


def test_search_shows_repos_then_quantizations_with_sizes_and_verdicts(window, hub, qtbot):
    from laya_desktop.gui.units import fmt_bytes
    _panel, dialog = open_dialog(window)
    try:
        assert search(qtbot, dialog, "acme") == [TINY, LOCKED, SLOW, LATER]   # most downloaded first
        rows = {dialog.results.item(r, 0).text(): r for r in range(dialog.results.rowCount())}
        assert dialog.results.item(rows[TINY], 2).text() == "apache-2.0"
        assert dialog.results.item(rows[TINY], 3).text() == ""
        assert dialog.results.item(rows[LOCKED], 2).text() == "llama3"
        assert dialog.results.item(rows[LOCKED], 3).text() == "gated"

        open_repo(qtbot, dialog, TINY)
        shown = [(dialog.files.item(r, 0).text(), dialog.files.item(r, 1).text())
                 for r in range(dialog.files.rowCount())]   # smallest first
        assert shown == [("F16", fmt_bytes(len(hub.data) + 4096)), ("Q8_0", fmt_bytes(len(hub.big)))]
        assert "licence: apache-2.0" in dialog.repo_info.text()
        wait_for_estimates(qtbot, dialog)
        assert verdicts(dialog) == ["fits", "fits"]   # a 0.4 MiB model on any test machine
        small = dialog.fits[0].needed_bytes
        assert dialog.files.item(0, 2).text().startswith(fmt_bytes(small))

        dialog.n_ctx.setValue(1 << 20)     # a million tokens x 256: no machine has that much
        dialog.parallel.setValue(256)
        qtbot.waitUntil(lambda: dialog.fits and all(f is not None and f.needed_bytes > small
                                                    for f in dialog.fits), timeout=15000)
        assert verdicts(dialog) == ["does not fit", "does not fit"]
        assert dialog.files.item(0, 3).toolTip()   # the estimate's reason
    finally:
        dialog.close()


def test_download_shows_progress_outlives_the_dialog_and_lands_in_the_config(window, hub,
                                                                            models_dir, qtbot):
    panel, dialog = open_dialog(window)
    search(qtbot, dialog, "tiny")
    open_repo(qtbot, dialog, TINY)
    dialog.n_ctx.setValue(1024)
    dialog.parallel.setValue(2)
    select_quant(dialog, "Q8_0")
    wait_for_estimates(qtbot, dialog)    # they read the file's header: a GET the cut would take
    hub.cut_at(TINY, "tiny-Q8_0.gguf", STALL_AT, mode="stall")
    assert dialog.download_btn.isEnabled()
    dialog.download_btn.click()

    # stalled half way: the dialog and the downloads list both show it
    qtbot.waitUntil(lambda: dialog.job_id is not None and 400 <= dialog.progress.value() < 1000,
                    timeout=15000)
    job_id = dialog.job_id
    from laya_desktop.gui.units import fmt_bytes
    assert f"of {fmt_bytes(len(hub.big))}" in dialog.progress_text.text(), dialog.progress_text.text()
    view = panel.downloads_view
    assert not view.isHidden()
    row = view.row_of(job_id)
    assert view.table.item(row, 0).text() == TINY
    assert view.table.item(row, 1).text() == "Q8_0"
    assert 400 <= view.table.cellWidget(row, 2).value() < 1000
    dialog.close()                         # the download goes on without it

    hub.release()
    qtbot.waitUntil(lambda: job_id in panel.downloads.names, timeout=20000)
    name = panel.downloads.names[job_id]
    file = models_dir / "acme" / "tiny-GGUF" / "tiny-Q8_0.gguf"
    assert file.read_bytes() == hub.big
    entry = next(m for m in window.doc.applied["models"] if m["name"] == name)
    assert entry == {**entry, "name": "tiny-q8_0", "backend": "llama_cpp", "path": str(file),
                     "n_ctx": 1024, "parallel": 2}   # the context and parallel judged at
    assert any("chat template" in note for note in panel.downloads.notes[job_id])
    on_disk = yaml.safe_load(window.config_file.read_text())
    assert name in [m["name"] for m in on_disk["models"]]
    row = view.row_of(job_id)
    assert view.table.item(row, 0).text() == name
    assert view.table.cellWidget(row, 2).value() == 1000
    assert name in view.table.item(row, 5).text()
    qtbot.waitUntil(lambda: name in [panel.model.name_at(r) for r in range(panel.model.rowCount())],
                    timeout=5000)

    # Use for rule… > default: the new model serves it, the old target is its first fallback
    view.table.selectRow(row)
    assert view.rule_btn.isEnabled()
    menu = view.rule_btn.menu()
    menu.aboutToShow.emit()
    action = next(a for a in menu.actions() if a.text() == "default")
    with qtbot.waitSignal(panel.downloads.rule_applied, timeout=15000) as blocker:
        action.trigger()
    assert blocker.args == ["default", name, True, ""]
    default = next(r for r in window.doc.applied["routes"] if r["name"] == "default")
    assert default["target"] == name and default["fallback"][0] == "tiny"
    on_disk = yaml.safe_load(window.config_file.read_text())
    assert next(r for r in on_disk["routes"] if r["name"] == "default")["target"] == name

    # a rule that is not there yet: `agents`, for requests tagged agents, before the catch-all
    menu.aboutToShow.emit()
    assert "default" not in [a.data() for a in menu.actions()]
    new = next(a for a in menu.actions() if a.data() == "agents")
    with qtbot.waitSignal(panel.downloads.rule_applied, timeout=15000) as blocker:
        new.trigger()
    assert blocker.args == ["agents", name, True, ""]
    routes = window.doc.applied["routes"]
    agents = next(r for r in routes if r["name"] == "agents")
    assert agents["target"] == name and agents["match"]["tags"] == ["agents"]
    assert [r["name"] for r in routes].index("agents") < [r["name"] for r in routes].index("default")


def test_cancel_stops_the_download_and_adds_nothing(window, hub, models_dir, qtbot):
    panel, dialog = open_dialog(window)
    try:
        search(qtbot, dialog, "slow")
        open_repo(qtbot, dialog, SLOW)
        select_quant(dialog, "Q4_K_M")
        wait_for_estimates(qtbot, dialog)
        hub.cut_at(SLOW, "slow-Q4_K_M.gguf", STALL_AT, mode="stall")
        dialog.download_btn.click()
        qtbot.waitUntil(lambda: dialog.job_id is not None and dialog.progress.value() >= 300,
                        timeout=15000)
        job_id = dialog.job_id
        view = panel.downloads_view
        view.table.selectRow(view.row_of(job_id))
        assert view.cancel_btn.isEnabled()
        models_before = window.doc.model_names()
        view.cancel_btn.click()
        hub.release()                      # the stalled read wakes and sees the cancel
        qtbot.waitUntil(lambda: getattr(panel.downloads.job(job_id), "state", None) == "cancelled",
                        timeout=15000)
        qtbot.waitUntil(lambda: view.table.item(view.row_of(job_id), 5).text() == "cancelled",
                        timeout=5000)
        assert dialog.progress_text.text() == "cancelled"
        assert not dialog.cancel_btn.isEnabled()
        folder = models_dir / "acme" / "slow-GGUF"
        assert not folder.exists() or list(folder.iterdir()) == []   # no partial file left
        assert window.doc.model_names() == models_before
        assert job_id not in panel.downloads.names
    finally:
        dialog.close()


def test_downloads_finishing_together_all_land_in_the_config(window, hub, gui_tiny_gguf, qtbot):
    """Each registration is a PUT from the revision it was computed at; they go one at a time,
    so none overwrites or loses another."""
    from laya_desktop.hub.files import repo_choices
    repos = [f"acme/batch{i}-GGUF" for i in range(4)]
    for repo in repos:
        hub.add_repo(repo, {f"{repo.split('/')[1].lower()}-Q4_0.gguf": hub.data})
    downloads = window.panel("models").downloads
    job_ids: list[str] = []
    downloads.started.connect(job_ids.append)
    try:
        for repo in repos:
            downloads.start(repo, repo_choices(repo).choices[0], n_ctx=512, parallel=1)
        qtbot.waitUntil(lambda: len(job_ids) == len(repos), timeout=15000)
    finally:
        downloads.started.disconnect(job_ids.append)
    qtbot.waitUntil(lambda: all(j in downloads.names for j in job_ids), timeout=30000)
    names = {downloads.names[j] for j in job_ids}
    assert names == {f"batch{i}-gguf-q4_0" for i in range(4)}
    assert names <= set(window.doc.model_names())
    on_disk = yaml.safe_load(window.config_file.read_text())
    assert names <= {m["name"] for m in on_disk["models"]}


def test_mlx_toggle_searches_mlx_community_and_shows_its_build(window, hub, qtbot):
    from laya_desktop.gui.panels.get_models_dialog import GetModelsDialog
    hub.add_repo("mlx-community/tiny-chat-4bit", {"config.json": b"{}", "tokenizer.json": b"{}",
                                                  "model.safetensors": bytes(3 << 20),
                                                  "README.md": b"# card"})
    panel = window.panel("models")
    dialog = GetModelsDialog(panel.downloads, parent=panel, mlx_available=True)
    try:
        dialog.open()
        assert not dialog.mlx.isHidden()
        assert search(qtbot, dialog, "tiny")[0] == TINY           # GGUF repositories
        dialog.mlx.setChecked(True)                             # searches again, for MLX builds
        qtbot.waitUntil(lambda: dialog.results.rowCount() == 1
                        and dialog.results.item(0, 0).text() == "mlx-community/tiny-chat-4bit",
                        timeout=15000)
        open_repo(qtbot, dialog, "mlx-community/tiny-chat-4bit")
        assert [(c.quant, c.kind) for c in dialog.repo.choices] == [("4bit", "mlx")]
        assert dialog.parallel.value() == 1                     # the mlx backend's default
        wait_for_estimates(qtbot, dialog)
        assert verdicts(dialog) == ["fits"]
        assert "size" in dialog.files.item(0, 3).toolTip()     # judged by the weights' size
    finally:
        dialog.close()


def test_gated_repository_without_a_token_says_so_and_offers_no_download(window, hub, qtbot):
    _panel, dialog = open_dialog(window)
    try:
        search(qtbot, dialog, "locked")
        assert dialog.results.item(0, 3).text() == "gated"
        open_repo(qtbot, dialog, LOCKED)
        text = dialog.message.text()
        assert not dialog.message.isHidden()
        assert "gated" in text and "HF_TOKEN" in text and f"{LOCKED}" in text, text
        assert "gated:" in dialog.repo_info.text()
        select_quant(dialog, "Q4_K_M")
        assert not dialog.download_btn.isEnabled()
    finally:
        dialog.close()


def test_unreachable_hub_says_so_and_add_gguf_is_one_click_away(window, hub, monkeypatch, qtbot):
    from laya_desktop.gui.panels.model_dialog import ModelDialog
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")   # nothing listens
    panel, dialog = open_dialog(window)
    dialog.query.setText("qwen")
    dialog.search_btn.click()
    qtbot.waitUntil(lambda: dialog.offline, timeout=20000)
    assert "cannot be reached" in dialog.message.text()
    assert "Add GGUF" in dialog.message.text()
    assert dialog.results.rowCount() == 0
    assert not dialog.add_gguf_btn.isHidden() and dialog.add_gguf_btn.isEnabled()
    dialog.add_gguf_btn.click()
    assert dialog.isHidden()
    opened = [d for d in panel.findChildren(ModelDialog) if d.isVisible()]
    assert [d.windowTitle() for d in opened] == ["Add GGUF model"]
    opened[0].reject()


def test_a_download_left_unfinished_is_offered_and_resumes_from_its_partial_file(
        window, hub, models_dir, qtbot):
    """What a killed app leaves behind: the manager's record of the job and its partial file. The
    next launch's Downloads offers it; Resume asks the hub for the rest only."""
    from laya_desktop.gui.downloads import Downloads
    from laya_desktop.gui.downloads_view import DownloadsView
    from laya_desktop.hub import folders
    from laya_desktop.hub.files import repo_choices

    choice = repo_choices(LATER).choice("Q5_K_M")
    have = len(hub.data) // 4
    dest = models_dir / "acme" / "later-GGUF" / "later-Q5_K_M.gguf"
    dest.parent.mkdir(parents=True, exist_ok=True)
    Path(str(dest) + ".part").write_bytes(hub.data[:have])
    state = folders.state_file(models_dir)
    records = json.loads(state.read_text()).get("jobs", []) if state.exists() else []
    records.append({"job_id": "left-over", "repo_id": LATER, "choice": choice.to_dict()})
    state.write_text(json.dumps({"jobs": records}))

    panel = window.panel("models")
    downloads = Downloads(window.doc, parent=panel)   # as at the next launch
    view = DownloadsView(downloads)
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: not view.pending_row.isHidden(), timeout=10000)
    assert f"{LATER} Q5_K_M" in view.pending_text.text()
    view.resume_btn.click()
    qtbot.waitUntil(lambda: "left-over" in downloads.names, timeout=20000)
    assert dest.read_bytes() == hub.data
    assert hub.ranges_asked("later-Q5_K_M.gguf") == [f"bytes={have}-"]
    assert downloads.names["left-over"] in window.doc.model_names()
    downloads.stop()
    assert os.path.exists(dest)


@pytest.fixture
def bare_window(qapp, tmp_path):
    from laya_desktop.gui.main_window import MainWindow
    win = MainWindow(str(tmp_path / "models.yaml"), "127.0.0.1", free_port())   # no engine started
    yield win
    win.shutdown(grace_s=0.5)
    win.deleteLater()


@pytest.mark.parametrize("size", ((1366, 768), (1280, 720)), ids=lambda s: f"{s[0]}x{s[1]}")
def test_dialog_and_downloads_list_fit_a_laptop_screen(qapp, bare_window, size):
    from squeeze import squeezed
    from laya_desktop.hub.types import PullStatus
    panel = bare_window.panel("models")
    jobs = [PullStatus(f"job{i}", f"acme/model-{i}-GGUF", "Q4_K_M", state, 3 << 30, 5 << 30,
                       40e6, 51.0, None, None) for i, state in enumerate(
                           ("downloading", "queued", "verifying", "downloading", "queued"))]
    panel.downloads.jobs = jobs
    panel.downloads_view.show_jobs(jobs)
    bare_window.show()
    bare_window.resize(*size)
    bare_window.tabs.setCurrentWidget(panel)
    for _ in range(3):
        qapp.processEvents()
    assert not panel.downloads_view.isHidden()
    assert squeezed(bare_window) == []
    assert panel.downloads_view.table.cellWidget(0, 2).value() == 600   # 3 of 5 GiB

    dialog = panel.open_get_models()
    try:
        hint = dialog.minimumSizeHint()
        assert hint.width() <= size[0] and hint.height() <= size[1] - 40, hint
        available = dialog.screen().availableGeometry()
        assert dialog.width() <= available.width() and dialog.height() <= available.height()
        dialog.resize(min(size[0], available.width()), min(size[1] - 40, available.height()))
        for _ in range(3):
            qapp.processEvents()
        assert squeezed(dialog) == []
    finally:
        dialog.close()

