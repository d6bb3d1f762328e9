"""Which of PyInstaller's collected files the bundle leaves out (used by laya.spec).

PySide6's hooks collect every plugin and translation of the Qt modules in use; the app needs the
platform plugins, input methods (Chinese input needs ibus/fcitx), themes and a few image formats.
"""
from __future__ import annotations

import fnmatch

DROP = [
    "PySide6/Qt/plugins/generic/*",            # touch and tablet input drivers
    "PySide6/Qt/plugins/sqldrivers/*",
    "PySide6/Qt/plugins/networkinformation/*",
    # the model dialog's connection test reaches remote APIs over TLS with QtNetwork's OpenSSL
    # backend (the bundled libssl); the certificate-only backend is never chosen over it
    "PySide6/Qt/plugins/tls/libqcertonlybackend.so",
    "PySide6/Qt/plugins/egldeviceintegrations/*",  # embedded EGL without a window system
    "PySide6/Qt/plugins/platforms/libqvnc.so",
    "PySide6/Qt/plugins/platforms/libqlinuxfb.so",
    "PySide6/Qt/plugins/platforms/libqvkkhrdisplay.so",
    "PySide6/Qt/plugins/platforms/libqeglfs.so",
    "PySide6/Qt/plugins/platforms/libqminimalegl.so",
    "PySide6/Qt/plugins/imageformats/libqtiff.so",
    "PySide6/Qt/plugins/imageformats/libqwebp.so",
    "PySide6/Qt/plugins/imageformats/libqicns.so",
    "PySide6/Qt/plugins/imageformats/libqtga.so",
    "PySide6/Qt/plugins/imageformats/libqwbmp.so",
    "PySide6/Qt/plugins/imageformats/libqpdf.so",
    "PySide6/Qt/lib/libQt6Pdf.so*",
    "PySide6/Qt/lib/libQt6Quick*.so*",
    "PySide6/Qt/lib/libQt6Qml*.so*",
    "PySide6/Qt/lib/libQt6EglFSDeviceIntegration.so*",
    "PySide6/Qt/lib/libQt6EglFsKmsSupport.so*",
    "libQt6EglF*",                             # top-level links to the two above
    "PySide6/Qt/lib/libQt6VirtualKeyboard.so*",
    "PySide6/Qt/plugins/platforminputcontexts/libqtvirtualkeyboardplugin.so",
    # The GTK3 theme needs the host's GTK anyway (libgtk-3 is not bundled); collecting its cairo and
    # pango here would only shadow the host's copies. The XDG portal theme stays.
    "PySide6/Qt/plugins/platformthemes/libqgtk3.so",
    "*/__pycache__/*",
    "*.pyi",
]
# Libraries every Linux desktop has, which must match the host's drivers, X server and font setup
# (after AppImage's excludelist), and GTK's libraries that only the dropped GTK3 theme needed.
HOST_LIBS = [
    "libX11.so.*", "libX11-xcb.so.*", "libxcb.so.*", "libXau.so.*", "libXdmcp.so.*", "libXext.so.*",
    "libXrender.so.*", "libbsd.so.*", "libmd.so.*", "libGL.so.*", "libEGL.so.*", "libGLX.so.*",
    "libGLdispatch.so.*", "libOpenGL.so.*", "libdrm.so.*", "libgbm.so.*", "libfontconfig.so.*",
    "libfreetype.so.*", "libexpat.so.*", "libz.so.*", "libgcc_s.so.*", "libdbus-1.so.*",
    "libsystemd.so.*", "libgcrypt.so.*", "libgpg-error.so.*", "libcap.so.*", "liblz4.so.*",
    "libcairo*.so.*", "libpango*.so.*", "libgdk_pixbuf*.so.*", "libatk*.so.*", "libharfbuzz.so.*",
    "libgraphite2.so.*", "libfribidi.so.*", "libthai.so.*", "libdatrie.so.*", "libpixman*.so.*",
    "libjpeg.so.*", "libpng16.so.*", "libgio-2.0.so.*", "libgobject-2.0.so.*", "libgmodule-2.0.so.*",
    "libmount.so.*", "libblkid.so.*", "libselinux.so.*",
]
# Qt's own strings (dialog buttons and the like) in the languages the app ships.
KEEP_TRANSLATIONS = ["*_zh_CN.qm"]


def dropped(dest: str) -> bool:
    if any(fnmatch.fnmatch(dest, pattern) for pattern in DROP):
        return True
    if "/" not in dest and any(fnmatch.fnmatch(dest, pattern) for pattern in HOST_LIBS):
        return True
    if dest.startswith("PySide6/Qt/translations/"):
        return not any(fnmatch.fnmatch(dest, p) for p in KEEP_TRANSLATIONS)
    return False


def drop_unused(toc):
    """The TOC (dest, src, typecode entries) without the files above."""
    return [entry for entry in toc if not dropped(entry[0])]


def strip_own_binaries(toc, workdir: str):
    """Stripped copies of the binaries that come from Python's build and the system (libpython
    carries its debug info). Wheels' binaries stay as they are: they come stripped, and
    `strip` breaks the ones auditwheel patched (numpy's OpenBLAS fails to load)."""
    import os
    import subprocess

    out = []
    for dest, src, typecode in toc:
        if typecode in ("BINARY", "EXTENSION") and src and "site-packages" not in src \
                and os.path.isfile(src):
            stripped = os.path.join(workdir, "stripped", dest)
            os.makedirs(os.path.dirname(stripped), exist_ok=True)
            if subprocess.run(["strip", "--strip-unneeded", "-o", stripped, src]).returncode == 0:
                src = stripped
        out.append((dest, src, typecode))
    return out
