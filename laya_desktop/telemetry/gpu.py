"""NVIDIA GPU memory through NVML (the nvidia-ml-py package, imported as pynvml).

No GPU, no NVML library or no driver is a normal state, not an error: `available` is False,
`status_message` says why (logged once, at info) and `sample()` returns []. A failure while
sampling (a GPU falling off the bus, a driver reload) is logged once and never raised.

NVML is looked for on the first `start()` or `sample()`, not when the sampler is built: pynvml's
import and the driver's start (tens of ms without a GPU, more with one) stay off the engine's
start-up; the telemetry service calls `start()` in a worker thread once the engine runs.
"""
from __future__ import annotations

import errno
import logging
import threading

log = logging.getLogger(__name__)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class GpuSampler:
    def __init__(self):
        self.available = False
        self.status_message = ""
        self._nvml = None
        self._devices: list[tuple[int, object, str]] = []  # (index, handle, name)
        self._warned = False
        self._looked = False   # NVML looked for (or the sampler closed)
        self._lock = threading.Lock()

    def start(self) -> None:
        """Look for NVML and the GPUs, once; a caller that comes while another thread looks
        waits for its answer."""
        if self._looked:
            return
        with self._lock:
            if not self._looked:
                self._looked = self._init()

    def _init(self) -> bool:
        """False when the look said nothing (no descriptor free to import or open the library:
        look again next time), True once it knows."""
        try:
            import pynvml
            pynvml.nvmlInit()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                return False
            self._unavailable(f"no NVIDIA GPU telemetry: {_text(exc) or type(exc).__name__}")
            return True
        except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
            self._unavailable(f"no NVIDIA GPU telemetry: {_text(exc) or type(exc).__name__}")
            return True
        self._nvml = pynvml
        try:
            count = pynvml.nvmlDeviceGetCount()
            for i in range(count):
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                self._devices.append((i, handle, _text(pynvml.nvmlDeviceGetName(handle))))
        except Exception as exc:
            self._unavailable(f"NVML could not list the GPUs: {_text(exc)}")
            self._shutdown()
            return True
        if not self._devices:
            self._unavailable("NVML found no NVIDIA GPU")
            self._shutdown()
            return True
        self.available = True
        self.status_message = ", ".join(f"GPU {i}: {name}" for i, _, name in self._devices)
        log.info("GPU telemetry: %s", self.status_message)
        return True

    def _unavailable(self, message: str) -> None:
        self.available = False
        self.status_message = message
        log.info("%s", message)

    def sample(self) -> list[dict]:
        """[{index, name, used, total, processes: {pid: used_bytes}}] — [] when unavailable."""
        self.start()
        if not self.available:
            return []
        nvml = self._nvml
        out = []
        for index, handle, name in self._devices:
            try:
                mem = nvml.nvmlDeviceGetMemoryInfo(handle)
                gpu = {"index": index, "name": name, "used": int(mem.used), "total": int(mem.total),
                       "processes": self._processes(handle)}
            except Exception as exc:
                if not self._warned:
                    self._warned = True
                    log.warning("GPU %d telemetry failed (reported once): %s", index, _text(exc))
                continue
            out.append(gpu)
        return out

    def _processes(self, handle) -> dict[int, int]:
        nvml = self._nvml
        procs: dict[int, int] = {}
        for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            fn = getattr(nvml, getter, None)
            if fn is None:
                continue
            try:
                for p in fn(handle):
                    used = p.usedGpuMemory
                    # None (NVML_VALUE_NOT_AVAILABLE) in containers and on some drivers
                    procs[int(p.pid)] = procs.get(int(p.pid), 0) + (int(used) if used else 0)
            except Exception:
                continue
        return procs

    def close(self) -> None:
        with self._lock:
            self._looked = True  # a closed sampler never looks again
            self._shutdown()

    def _shutdown(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = None
        self.available = False
