"""The app's downloads from the model hub: one DownloadManager for the window's life, polled by a
QTimer on the GUI thread while a job runs, and each finished download added to the registry the
way every other registry change is (a full config through EngineState, PUT /admin/config).

Starting and resuming downloads, registering them and the Get models dialog's hub calls run in
this object's own workers (the disk, the network, huggingface_hub's import); `jobs()` only reads
the manager's table. A download is registered once, when this session sees it finish (a file
already registered keeps its entry). Downloads an earlier run left unfinished are offered for
resuming. The context and parallel the user judged the fit at travel with the job into the new
entry, kept in the app's settings across a restart.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from types import SimpleNamespace

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Signal

from laya_desktop.config.schema import MemoryConfig
from laya_desktop.gui.engine_state import EngineState
from laya_desktop.gui.translations import settings
from laya_desktop.gui.workers import WorkerPool

POLL_MS = 500
STOP_WAIT_MS = 2000  # a hub call in flight ends within its own timeout; not waited for longer
STALE_RETRIES, STALE_RETRY_MS = 3, 300
WORKER_THREADS = 6   # a search, a repository, its choices' estimates side by side
SETTINGS_KEY = "downloads/wanted"   # job id -> {n_ctx, parallel}: what the user judged the fit at


def _models_folder(config: dict):
    from laya_desktop.hub import folders
    server = SimpleNamespace(models_dir=(config.get("server") or {}).get("models_dir"))
    folder = folders.models_dir(SimpleNamespace(server=server))
    return folder, folders.state_file(folder)


def _manager_for(config: dict) -> tuple:
    """The manager for the config's models folder, and the jobs an earlier run left unfinished."""
    from laya_desktop.hub.download import DownloadManager
    manager = DownloadManager(*_models_folder(config))
    return manager, manager.pending()


def _manager_if_pending(config: dict) -> tuple:
    """At start-up: the manager only when an earlier run left downloads to resume, so that the
    app that downloads nothing never imports huggingface_hub."""
    _folder, state = _models_folder(config)
    try:
        recorded = json.loads(state.read_text(encoding="utf-8")).get("jobs")
    except FileNotFoundError:
        recorded = None
    except (OSError, ValueError, AttributeError):
        recorded = True                   # let the manager itself judge what it cannot read
    return _manager_for(config) if recorded else (None, [])


def _registration(config: dict, local_path: str, wanted: dict) -> tuple:
    """(the config with the download added, its name, notes on the settings chosen). Reads the
    file's header and this machine's memory."""
    from laya_desktop.hub.register import registration
    reserved = (config.get("memory") or {}).get("reserved_system_gb")
    return registration(config, Path(local_path), n_ctx=wanted.get("n_ctx"),
                        parallel=wanted.get("parallel"),
                        reserved_system_gb=MemoryConfig.reserved_system_gb if reserved is None
                        else reserved)


def _reason(error: object) -> str:
    describe = getattr(error, "describe", None)
    return describe() if describe else str(error)


class Downloads(QObject):
    changed = Signal(list)            # every job's PullStatus, newest table
    started = Signal(str)             # job id
    start_failed = Signal(str)        # the reason, for the user
    registered = Signal(str, str)     # job id, the model's name in the registry
    register_failed = Signal(str, str)  # job id, the reason
    rule_applied = Signal(str, str, bool, str)  # rule, model, ok, the engine's reason when not
    unavailable = Signal(str)         # no manager: the models folder cannot be used
    pending_found = Signal(list)      # records of downloads an earlier run left unfinished

    def __init__(self, doc: EngineState, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.pool = WorkerPool(self, max_threads=WORKER_THREADS)   # the hub's calls and the disk's
        self.manager = None
        self.problem: str | None = None
        self._opening = False
        self._looked = False               # for downloads an earlier run left unfinished
        self._queued: list = []            # starts asked for while the manager was being made
        self.jobs: list = []
        self.pending: list = []            # unfinished at the last exit, not resumed yet
        self._watching: set[str] = set()   # seen unfinished in this session
        self._handled: set[str] = set()    # registered, or its registration was tried
        self._waiting: list = []           # done before a config was applied
        self.names: dict[str, str] = {}    # job id -> registered model name
        self.notes: dict[str, list] = {}   # job id -> the registration's notes (fit, GPU, template)
        self._tries: dict[str, int] = {}   # registrations refused as stale (409), per job
        self._to_register: list = []       # done, in line to be registered
        self._registering = False
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.poll)
        doc.applied_changed.connect(self._on_config)
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.stop)
        if doc.applied:
            self._on_config(doc.applied)

    # --- the manager ----------------------------------------------------------------------------
    def _on_config(self, config: dict) -> None:
        if not self._looked:
            self._looked = self._opening = True
            self.pool.submit(_manager_if_pending, config, returned=self._on_manager,
                             errored=self._on_no_manager)
        waiting, self._waiting = self._waiting, []
        for job in waiting:
            self._register(job)
        if not self._registering:
            self._register_next()

    def _on_manager(self, answer: tuple) -> None:
        self._opening = False
        manager, records = answer
        if manager is None:
            if self._queued:              # a download asked for meanwhile: it needs one now
                self._open()
            return
        self.manager = manager
        self._on_pending(records)
        self.poll()
        queued, self._queued = self._queued, []
        for repo_id, choice, n_ctx, parallel in queued:
            self.start(repo_id, choice, n_ctx=n_ctx, parallel=parallel)

    def _open(self) -> None:
        self._opening = True   # in a worker: the hub package imports huggingface_hub
        self.pool.submit(_manager_for, self.doc.copy(), returned=self._on_manager,
                         errored=self._on_no_manager)

    def _on_no_manager(self, exc: Exception) -> None:
        self._opening = False
        self.problem = str(exc)
        self.unavailable.emit(self.problem)
        queued, self._queued = self._queued, []
        for _start in queued:
            self.start_failed.emit(self.problem)

    def _on_pending(self, records: list) -> None:
        running = {j.job_id for j in self.jobs}
        self.pending = [r for r in records if r.get("job_id") not in running]
        if self.pending:
            self.pending_found.emit(self.pending)

    def resume(self) -> None:
        """Continue the downloads left unfinished at the last exit (they are offered, not resumed
        unasked: another Laya on this machine, `laya pull` say, may be downloading them now)."""
        if self.manager is None:
            return
        self.pending = []
        self.pool.submit(self.manager.resume_pending, returned=self._on_resumed,
                         errored=lambda exc: self.start_failed.emit(str(exc)))

    def _on_resumed(self, job_ids: list) -> None:
        self._watching.update(job_ids)
        self.poll()

    def start(self, repo_id: str, choice, *, n_ctx: int | None = None,
              parallel: int | None = None) -> None:
        """Start downloading `choice` of `repo_id`; `started` or `start_failed` tells."""
        if self.manager is None:
            if self.problem or not self.doc.applied:
                self.start_failed.emit(self.problem or self.tr(
                    "the models folder is not known yet: the engine has not answered"))
                return
            self._queued.append((repo_id, choice, n_ctx, parallel))   # started once it is made
            if not self._opening:
                self._open()
            return

        # remembered before it starts: a poll may see it finish before `ok` runs
        mine = uuid.uuid4().hex[:12]
        self._remember(mine, n_ctx, parallel)

        def ok(job_id: str) -> None:
            if job_id != mine:            # that choice was under way already: it keeps its own
                self._forget(mine)
            self._watching.add(job_id)
            self.started.emit(job_id)
            self.poll()

        def bad(exc: Exception) -> None:
            self._forget(mine)
            self.start_failed.emit(str(exc))
        self.pool.submit(self.manager.start, repo_id, choice, job_id=mine, returned=ok, errored=bad)

    def cancel(self, job_id: str) -> None:
        if self.manager is not None:
            self.pool.submit(self.manager.cancel, job_id, returned=lambda _r: self.poll(),
                             errored=lambda exc: self.start_failed.emit(str(exc)))

    def stop(self) -> None:
        """At shutdown: stop polling and the workers. The jobs' threads die with the process;
        their partial files and the manager's state file let them resume at the next launch."""
        self._timer.stop()
        self.pool.shutdown(timeout_ms=STOP_WAIT_MS)

    # --- polling --------------------------------------------------------------------------------
    def poll(self) -> None:
        if self.manager is None:
            return
        self.jobs = list(self.manager.jobs())
        for job in self.jobs:
            if not job.finished:
                self._watching.add(job.job_id)
            elif job.state == "done" and job.job_id in self._watching \
                    and job.job_id not in self._handled:
                self._handled.add(job.job_id)
                self._register(job)
        busy = any(not job.finished for job in self.jobs)
        if busy and not self._timer.isActive():
            self._timer.start()
        elif not busy:
            self._timer.stop()
        self.changed.emit(self.jobs)

    def job(self, job_id: str):
        return next((j for j in self.jobs if j.job_id == job_id), None)

    # --- the registry ---------------------------------------------------------------------------
    def _register(self, job) -> None:
        """Queue `job` for registering: one at a time, so downloads that end together do not
        race each other's PUTs."""
        if not self.doc.applied:
            self._waiting.append(job)
            return
        self._to_register.append(job)
        if not self._registering:
            self._register_next()

    def _register_next(self) -> None:
        self._registering = bool(self._to_register) and bool(self.doc.applied)
        if self._registering:
            self._register_now(self._to_register.pop(0))

    def _register_now(self, job) -> None:
        """The hub's own registration (the settings `laya pull` gives a download: context, GPU
        layers, chat template), computed in a worker from the applied config, then sent as
        every registry change is; `base` makes a config changed meanwhile answer 409."""
        config, base = self.doc.copy(), self.doc.etag

        def failed(reason: str) -> None:
            self.register_failed.emit(job.job_id, reason)
            self._register_next()

        def computed(answer: tuple) -> None:
            new, name, notes = answer
            self.notes[job.job_id] = list(notes)
            if new == config:             # registered already (pulled again): nothing to send
                self._registered(job.job_id, name)
                self._register_next()
                return

            def done(ok: bool, result: object) -> None:
                if ok:
                    self._registered(job.job_id, name)
                    self._register_next()
                elif getattr(result, "status", None) == 409 \
                        and self._tries.get(job.job_id, 0) < STALE_RETRIES:
                    # changed elsewhere (a hand edit, another client): the engine state reads
                    # it again; computed afresh from that, a moment later
                    self._tries[job.job_id] = self._tries.get(job.job_id, 0) + 1
                    QTimer.singleShot(STALE_RETRY_MS, self, lambda: self._register_now(job))
                else:
                    failed(_reason(result))
            self.doc.apply(new, on_done=done, base=base)
        self.pool.submit(_registration, config, job.local_path, self._recall(job.job_id),
                         returned=computed, errored=lambda exc: failed(str(exc)))

    def _registered(self, job_id: str, name: str) -> None:
        self.names[job_id] = name
        self._forget(job_id)
        self.registered.emit(job_id, name)

    def use_for_rule(self, rule: str, model: str) -> None:
        """Send the config with rule `rule` sending its requests to `model`, as `laya pull --rule`
        does: an existing rule's old target becomes its first fallback; a new `default` is a
        catch-all at the end, another new rule matches the tag of its name."""
        from laya_desktop.hub.register import with_rule   # imported already by the registration

        def done(ok: bool, result: object) -> None:
            self.rule_applied.emit(rule, model, ok, "" if ok else _reason(result))
        self.doc.apply(with_rule(self.doc.copy(), model, rule), on_done=done)

    # --- what the user chose, across a restart --------------------------------------------------
    def _all_wanted(self) -> dict:
        try:
            value = json.loads(str(settings().value(SETTINGS_KEY, "{}")))
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def _save_wanted(self, value: dict) -> None:
        s = settings()
        s.setValue(SETTINGS_KEY, json.dumps(value))
        s.sync()

    def _remember(self, job_id: str, n_ctx: int | None, parallel: int | None) -> None:
        value = self._all_wanted()
        value[job_id] = {"n_ctx": n_ctx, "parallel": parallel}
        self._save_wanted(value)

    def _recall(self, job_id: str) -> dict:
        got = self._all_wanted().get(job_id) or {}
        return {k: got[k] for k in ("n_ctx", "parallel") if isinstance(got.get(k), int)}

    def _forget(self, job_id: str) -> None:
        value = self._all_wanted()
        if value.pop(job_id, None) is not None:
            self._save_wanted(value)

