"""Before Qt starts: name the system libraries the app still needs, and the one command that
installs them, instead of Qt aborting with "could not load the Qt platform plugin" (or every model
load failing inside llama.cpp).

The PySide6 wheels carry Qt itself but not the X11/Wayland, EGL, fontconfig, D-Bus and Kerberos
libraries of the desktop, and llama-cpp-python's wheel needs the system's OpenMP (libgomp); a
fresh Debian lacks all of them (checked in a debootstrap minbase chroot). ldd says which the Qt
libraries, the platform plugin and llama.cpp cannot resolve; libxcb-cursor is opened at run time,
so it is looked up apart. Qt-free (runs before PySide6 is imported).
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

# soname -> the Debian/Ubuntu package that provides it
DEBIAN_PACKAGES = {
    "libEGL.so.1": "libegl1", "libGL.so.1": "libgl1", "libOpenGL.so.0": "libopengl0",
    "libGLX.so.0": "libglx0", "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0", "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6", "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0", "libgthread-2.0.so.0": "libglib2.0-0",
    "libX11.so.6": "libx11-6", "libX11-xcb.so.1": "libx11-xcb1", "libxcb.so.1": "libxcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0", "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0", "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0", "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0", "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0", "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0", "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1", "libxcb-util.so.1": "libxcb-util1",
    "libxcb-glx.so.0": "libxcb-glx0", "libxcb-xinput.so.0": "libxcb-xinput0",
    "libSM.so.6": "libsm6", "libICE.so.6": "libice6", "libXrender.so.1": "libxrender1",
    "libwayland-client.so.0": "libwayland-client0", "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1", "libdecor-0.so.0": "libdecor-0-0",
    "libgssapi_krb5.so.2": "libgssapi-krb5-2", "libkrb5.so.3": "libkrb5-3",
    "libgomp.so.1": "libgomp1",
}
PLUGINS = {"xcb": "libqxcb.so", "wayland": "libqwayland.so"}
RUNTIME_LOADED = {"xcb": ["libxcb-cursor.so.0"]}   # dlopen()ed by the xcb plugin, invisible to ldd
# The Qt libraries the app imports (QtNetwork for the single-instance socket, QtSvg for the icon,
# QtOpenGL for pyqtgraph); a fresh Debian lacked Kerberos for QtNetwork.
CORE_LIBS = ("libQt6Core.so.6", "libQt6Gui.so.6", "libQt6Widgets.so.6", "libQt6DBus.so.6",
             "libQt6Network.so.6", "libQt6Svg.so.6", "libQt6OpenGL.so.6", "libQt6OpenGLWidgets.so.6")


def package_dir(name: str) -> Path | None:
    """Where a package lives, found without importing it (its import may be what fails)."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle and (Path(bundle) / name).is_dir():
        return Path(bundle) / name
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def qt_dir() -> Path | None:
    pyside = package_dir("PySide6")
    return pyside / "Qt" if pyside else None


def llama_libs() -> list[Path]:
    llama = package_dir("llama_cpp")
    return sorted((llama / "lib").glob("*.so")) if llama else []


def platform_plugin(env: dict | None = None) -> str:
    """The platform plugin Qt will try first: QT_QPA_PLATFORM, else wayland or xcb by session."""
    env = os.environ if env is None else env
    chosen = (env.get("QT_QPA_PLATFORM") or "").split(";")[0].split(":")[0].strip()
    if chosen:
        return chosen
    if env.get("WAYLAND_DISPLAY") and env.get("XDG_SESSION_TYPE", "wayland") == "wayland":
        return "wayland"
    return "xcb"


def parse_ldd(text: str) -> list[str]:
    """The sonames ldd reports as 'not found', in order, without repeats."""
    missing = []
    for line in text.splitlines():
        name, _, rest = line.strip().partition("=>")
        if rest.strip() == "not found" and name.strip() not in missing:
            missing.append(name.strip())
    return missing


def missing_libraries(plugin: str, qt: Path | None = None) -> list[str]:
    """Sonames Qt (with this platform plugin) cannot resolve."""
    qt = qt or qt_dir()
    if qt is None:
        return []
    files = [qt / "lib" / name for name in CORE_LIBS]
    if plugin in PLUGINS:
        files.append(qt / "plugins" / "platforms" / PLUGINS[plugin])
    missing = unresolved(files)
    for name in RUNTIME_LOADED.get(plugin, []):
        if name not in missing and not _loadable(name):
            missing.append(name)
    return missing


def unresolved(files: list[Path]) -> list[str]:
    """The sonames ldd cannot find for any of `files`."""
    if not shutil.which("ldd"):
        return []
    missing: list[str] = []
    for path in files:
        if not path.is_file():
            continue
        try:
            out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        missing += [name for name in parse_ldd(out) if name not in missing]
    return missing


def _loadable(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
        return True
    except OSError:
        return False


def install_hint(missing: list[str]) -> str:
    packages = sorted({DEBIAN_PACKAGES[name] for name in missing if name in DEBIAN_PACKAGES})
    unknown = [name for name in missing if name not in DEBIAN_PACKAGES]
    lines = []
    if packages:
        lines.append("On Debian or Ubuntu, install them with:")
        lines.append("  sudo apt-get install " + " ".join(packages))
    if unknown or not packages:
        lines.append("Elsewhere, install the packages that provide: " + ", ".join(unknown or missing))
    return "\n".join(lines)


def problem_report(env: dict | None = None) -> str | None:
    """A message for the user when Qt could not start here; None when nothing is missing."""
    if not sys.platform.startswith("linux"):
        return None
    env = os.environ if env is None else env
    plugin = platform_plugin(env)
    qt_missing = missing_libraries(plugin)
    if qt_missing and plugin == "wayland" and not env.get("QT_QPA_PLATFORM") and env.get("DISPLAY"):
        if not missing_libraries("xcb"):
            qt_missing = []  # Qt falls back to xcb (XWayland)
    engine_missing = [name for name in unresolved(llama_libs()) if name not in qt_missing]
    if qt_missing or engine_missing:
        parts = []
        if qt_missing:
            parts.append(f"Qt (its '{plugin}' display plugin) needs {', '.join(qt_missing)}")
        if engine_missing:
            parts.append(f"llama.cpp (every local model) needs {', '.join(engine_missing)}")
        return ("system libraries are missing: " + "; ".join(parts) + ".\n"
                + install_hint(qt_missing + engine_missing))
    if plugin == "xcb" and not env.get("DISPLAY"):
        return ("no display to open a window on: DISPLAY is not set. Run Laya Desktop inside a "
                "desktop session, or headless with QT_QPA_PLATFORM=offscreen.")
    return None
