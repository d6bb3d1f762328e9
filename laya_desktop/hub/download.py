"""Downloads the way a desktop app does them: each job on its own thread, progress with speed and
time left, cancel, and a record of unfinished jobs (the state file) so that `resume_pending()`
continues them after an interruption or a restart, from their partial files.

A job's files land in MODELS_DIR/OWNER/REPO/PATH. Before a job starts, the disk must have room
for what is still to come; a finished job calls `on_done(status)`, whose answer (a model name,
or None) the status then carries as `model_name`.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from laya_desktop.hub.errors import HubError, NotEnoughDisk
from laya_desktop.hub.folders import repo_folder
from laya_desktop.hub.transfer import Cancelled, fetch_file, on_disk, part_path
from laya_desktop.hub.types import HubFile, PullStatus, QuantChoice

SPEED_WINDOW_S = 3.0
DISK_MARGIN_BYTES = 16 << 20  # file-system metadata, the state file and the hash's own reads

OnDone = Callable[[PullStatus], "str | None"]


def choice_from_dict(d: dict) -> QuantChoice:
    return QuantChoice(quant=d["quant"], kind=d["kind"],
                       files=tuple(HubFile(f["path"], int(f["size"]), f.get("sha256"))
                                   for f in d["files"]),
                       total_bytes=int(d["total_bytes"]), repo_id=d.get("repo_id", ""),
                       revision=d.get("revision", ""))


@dataclass
class _Job:
    job_id: str
    repo_id: str
    choice: QuantChoice
    on_done: OnDone | None
    state: str = "queued"
    done_bytes: int = 0
    error: str | None = None
    error_code: str | None = None
    local_path: str | None = None
    model_name: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    samples: deque = field(default_factory=deque)  # (monotonic time, done_bytes)
    thread: threading.Thread | None = None
    ending: bool = False   # finished, its state not shown yet: the state file is written first


class DownloadManager:
    def __init__(self, models_dir: Path, state_file: Path, *,
                 free_bytes: Callable[[Path], int] | None = None):
        self.models_dir = Path(models_dir)
        self.state_file = Path(state_file)
        self._free_bytes = free_bytes or (lambda p: shutil.disk_usage(p).free)
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        # the state file is written under its own lock, never under _lock: jobs() is polled from
        # the GUI thread and must not wait on a disk
        self._file_lock = threading.Lock()

    # -- the caller's side ----------------------------------------------------------------------
    def start(self, repo_id: str, choice: QuantChoice, *, on_done: OnDone | None = None,
              job_id: str | None = None) -> str:
        """Start downloading `choice` of `repo_id`; the same choice already under way answers
        that job's id. Raises NotEnoughDisk (nothing started) when the rest of the download
        does not fit on the disk."""
        choice = replace(choice, repo_id=choice.repo_id or repo_id)
        with self._lock:
            for job in self._jobs.values():
                if (job.repo_id, job.choice.quant) == (repo_id, choice.quant) \
                        and job.state not in ("done", "failed", "cancelled"):
                    return job.job_id
        self.check_disk(repo_id, choice)
        job = _Job(job_id or uuid.uuid4().hex[:12], repo_id, choice, on_done)
        with self._lock:
            self._jobs[job.job_id] = job
        self._save()
        job.thread = threading.Thread(target=self._run, args=(job,), daemon=True,
                                      name=f"pull-{job.job_id}")
        job.thread.start()
        return job.job_id

    def cancel(self, job_id: str) -> bool:
        """Stop a job and remove its partial files; False when there is no such unfinished job."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.state in ("done", "failed", "cancelled"):
                return False
            job.cancel.set()
            never_started = job.thread is None   # a pending job from the state file
        if never_started:
            self._finish(job, "cancelled")
        return True

    def jobs(self) -> list[PullStatus]:
        with self._lock:
            return [self._status(j) for j in self._jobs.values()]

    def status(self, job_id: str) -> PullStatus | None:
        with self._lock:
            job = self._jobs.get(job_id)
            return self._status(job) if job else None

    def wait(self, job_id: str, timeout: float | None = None) -> PullStatus | None:
        """Block until the job has finished (or `timeout`); its last status."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while True:
                job = self._jobs.get(job_id)
                if job is None or job.state in ("done", "failed", "cancelled"):
                    return self._status(job) if job else None
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return self._status(job)
                self._changed.wait(left if left is not None else 1.0)

    def pending(self) -> list[dict]:
        """The unfinished jobs the state file records (from this run or an earlier one)."""
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        jobs = data.get("jobs") if isinstance(data, dict) else None
        return [j for j in jobs or [] if isinstance(j, dict) and "choice" in j]

    def resume_pending(self, on_done: OnDone | None = None) -> list[str]:
        """Start again every job left unfinished at the last exit; their ids. A job that cannot
        start (the disk is full now) is shown as failed with the reason."""
        started = []
        for record in self.pending():
            job_id = record.get("job_id") or uuid.uuid4().hex[:12]
            with self._lock:
                if job_id in self._jobs:
                    continue
            try:
                choice = choice_from_dict(record["choice"])
                started.append(self.start(record["repo_id"], choice, on_done=on_done,
                                          job_id=job_id))
            except NotEnoughDisk as exc:
                job = _Job(job_id, record["repo_id"], choice, on_done, state="failed",
                           error=str(exc), error_code=exc.code)
                with self._lock:
                    self._jobs[job_id] = job
                started.append(job_id)
            except (KeyError, TypeError, ValueError):
                continue  # a damaged record: nothing to resume from it
        return started

    def check_disk(self, repo_id: str, choice: QuantChoice) -> None:
        """NotEnoughDisk when what is still to download does not fit on the models folder's disk."""
        folder = repo_folder(self.models_dir, repo_id)
        remaining = sum(max(0, f.size - on_disk(folder / f.path)) for f in choice.files)
        probe = folder
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        free = self._free_bytes(probe)
        if remaining and remaining + DISK_MARGIN_BYTES > free:
            raise NotEnoughDisk(str(self.models_dir), remaining, free)

    # -- the job's thread -------------------------------------------------------------------------
    def _run(self, job: _Job) -> None:
        folder = repo_folder(self.models_dir, job.repo_id)
        revision = job.choice.revision or "main"
        try:
            self._set(job, state="downloading")
            done_before = 0
            for f in job.choice.files:
                dest = folder / f.path

                def on_start(have: int, base=done_before) -> None:
                    self._set(job, done_bytes=base + have, samples=deque())

                fetch_file(job.repo_id, revision, f, dest, on_start=on_start,
                           on_bytes=lambda n: self._advance(job, n), cancelled=job.cancel,
                           on_verify=lambda: self._set(job, state="verifying"))
                done_before += f.size
                self._set(job, state="downloading", done_bytes=done_before)
            self._set(job, state="verifying")
            first = folder / job.choice.first_file.path
            local = first if job.choice.kind == "gguf" else folder
            self._set(job, local_path=str(local))
            if job.on_done is not None:
                try:
                    name = job.on_done(self.status(job.job_id))
                    self._set(job, model_name=name)
                except Exception as exc:  # the caller's callback: whatever it raises, the
                    # download is done and must say so rather than hang in "verifying"
                    self._set(job, error=f"downloaded to {local}, not added to models.yaml: {exc}",
                              error_code="not_registered")
            self._finish(job, "done")
        except Cancelled:
            self._remove_partials(job)
            self._finish(job, "cancelled")
        except HubError as exc:
            self._finish(job, "failed", str(exc), exc.code)
        except OSError as exc:
            self._finish(job, "failed", f"cannot write the download: {exc}", "os_error")
        except Exception as exc:  # a failure no one foresaw must still end the job, not hang it
            self._finish(job, "failed", f"download failed: {type(exc).__name__}: {exc}", "error")

    def _advance(self, job: _Job, n: int) -> None:
        now = time.monotonic()
        with self._lock:
            job.done_bytes += n
            job.samples.append((now, job.done_bytes))
            while len(job.samples) > 2 and now - job.samples[0][0] > SPEED_WINDOW_S:
                job.samples.popleft()

    def _set(self, job: _Job, **changes) -> None:
        with self._changed:
            for k, v in changes.items():
                setattr(job, k, v)
            self._changed.notify_all()

    def _finish(self, job: _Job, state: str, error: str | None = None,
                code: str | None = None) -> None:
        with self._lock:
            job.ending = True
        self._save()   # without it: whoever sees the job finished finds the file says so too
        with self._changed:
            job.state = state
            if error is not None:
                job.error, job.error_code = error, code
            job.samples.clear()
            self._changed.notify_all()

    def _remove_partials(self, job: _Job) -> None:
        folder = repo_folder(self.models_dir, job.repo_id)
        for f in job.choice.files:
            with contextlib.suppress(OSError):
                part_path(folder / f.path).unlink()

    def _status(self, job: _Job) -> PullStatus:
        speed = 0.0
        if len(job.samples) >= 2:
            (t0, b0), (t1, b1) = job.samples[0], job.samples[-1]
            if t1 > t0:
                speed = (b1 - b0) / (t1 - t0)
        total = job.choice.total_bytes
        eta = (total - job.done_bytes) / speed if speed > 0 else None
        return PullStatus(job_id=job.job_id, repo_id=job.repo_id, quant=job.choice.quant,
                          state=job.state, done_bytes=min(job.done_bytes, total), total_bytes=total,
                          speed_bps=speed, eta_s=eta, error=job.error, local_path=job.local_path,
                          model_name=job.model_name, error_code=job.error_code)

    def _save(self) -> None:
        """Record the unfinished jobs, atomically (called without _lock held)."""
        with self._file_lock:
            with self._lock:
                records = [{"job_id": j.job_id, "repo_id": j.repo_id, "choice": j.choice.to_dict()}
                           for j in self._jobs.values()
                           if j.state in ("queued", "downloading", "verifying") and not j.ending]
                mine = {(j.repo_id, j.choice.quant) for j in self._jobs.values()}
                ids = set(self._jobs)
            # jobs of another process (or not resumed yet) stay recorded, unless this manager
            # has taken the same download over (a `laya pull` run again after an interruption)
            records += [r for r in self.pending() if r.get("job_id") not in ids
                        and (r.get("repo_id"), r["choice"].get("quant")) not in mine]
            try:
                self.state_file.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".pulls.", dir=self.state_file.parent)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"jobs": records}, f, indent=1)
                os.replace(tmp, self.state_file)
            except OSError:
                pass  # a read-only or full disk: the downloads go on, only a resume would not know
