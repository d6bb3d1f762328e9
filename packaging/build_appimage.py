"""Assemble Laya.AppDir from the PyInstaller folder and pack it into dist/Laya-<version>-x86_64.AppImage.

With the official appimagetool on PATH it does the packing (and embeds update information or a
signature when asked through its own environment variables); otherwise the home-built runtime
(packaging/runtime) is followed by a zstd squashfs made with mksquashfs. Standard library only.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP_ID = "org.laya.Desktop"
ICON_SIZES = (16, 32, 48, 64, 128, 256, 512)


def project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]


def link_tree(src: Path, dest: Path) -> None:
    """Hard links where the file system allows (the bundle is hundreds of MB), copies otherwise."""
    def link_or_copy(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)
    shutil.copytree(src, dest, symlinks=True, copy_function=link_or_copy)


def build_appdir(bundle: Path, appdir: Path) -> None:
    if appdir.exists():
        shutil.rmtree(appdir)
    resources = ROOT / "resources"
    lib = appdir / "usr" / "lib" / "laya"
    link_tree(bundle, lib)
    (appdir / "usr" / "bin").mkdir(parents=True)
    (appdir / "usr" / "bin" / "laya").symlink_to("../lib/laya/laya")
    (appdir / "AppRun").symlink_to("usr/bin/laya")

    desktop = f"{APP_ID}.desktop"
    shutil.copy2(resources / desktop, appdir / desktop)
    (appdir / "usr" / "share" / "applications").mkdir(parents=True)
    shutil.copy2(resources / desktop, appdir / "usr" / "share" / "applications" / desktop)
    metainfo = appdir / "usr" / "share" / "metainfo"
    metainfo.mkdir(parents=True)
    shutil.copy2(resources / f"{APP_ID}.metainfo.xml", metainfo / f"{APP_ID}.appdata.xml")

    icons = resources / "icons"
    hicolor = appdir / "usr" / "share" / "icons" / "hicolor"
    for size in ICON_SIZES:
        folder = hicolor / f"{size}x{size}" / "apps"
        folder.mkdir(parents=True)
        shutil.copy2(icons / f"laya-{size}.png", folder / f"{APP_ID}.png")
    (hicolor / "scalable" / "apps").mkdir(parents=True)
    shutil.copy2(icons / "laya.svg", hicolor / "scalable" / "apps" / f"{APP_ID}.svg")
    shutil.copy2(icons / "laya-256.png", appdir / f"{APP_ID}.png")
    (appdir / ".DirIcon").symlink_to(f"{APP_ID}.png")


def pack_with_appimagetool(tool: str, appdir: Path, out: Path) -> None:
    subprocess.run([tool, "--comp", "zstd", str(appdir), str(out)], check=True,
                   env=dict(os.environ, ARCH="x86_64"))


def pack_with_runtime(runtime: Path, appdir: Path, out: Path, level: int) -> None:
    image = out.with_suffix(".squashfs")
    image.unlink(missing_ok=True)
    # Blocks of 256 KiB: near the ratio of 1 MiB blocks, while a random read through FUSE (the
    # Python archive, Qt's libraries) decompresses a quarter as much.
    subprocess.run(["mksquashfs", str(appdir), str(image), "-comp", "zstd",
                    "-Xcompression-level", str(level), "-b", "256K", "-noappend", "-all-root",
                    "-no-xattrs", "-quiet", "-no-progress"], check=True)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as f:
        for part in (runtime, image):
            with open(part, "rb") as src:
                shutil.copyfileobj(src, f, 1 << 20)
    image.unlink()
    tmp.chmod(0o755)
    os.replace(tmp, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", type=Path, default=ROOT / "build" / "pyinstaller" / "dist" / "laya")
    parser.add_argument("--runtime", type=Path, default=ROOT / "build" / "runtime" / "runtime")
    parser.add_argument("--appdir", type=Path, default=ROOT / "build" / "Laya.AppDir")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist")
    parser.add_argument("--level", type=int, default=19, help="zstd compression level")
    args = parser.parse_args(argv)

    if not (args.bundle / "laya").is_file():
        parser.error(f"no PyInstaller bundle at {args.bundle} (run `make bundle`)")
    started = time.monotonic()
    build_appdir(args.bundle, args.appdir)
    args.dist.mkdir(parents=True, exist_ok=True)
    out = args.dist / f"Laya-{project_version()}-x86_64.AppImage"
    tool = shutil.which("appimagetool")
    if tool:
        pack_with_appimagetool(tool, args.appdir, out)
    else:
        if not args.runtime.is_file():
            parser.error(f"no AppImage runtime at {args.runtime} (run `make -C packaging/runtime`)")
        pack_with_runtime(args.runtime, args.appdir, out, args.level)
    print(f"{out}: {out.stat().st_size / 2**20:.1f} MiB, packed by "
          f"{'appimagetool' if tool else 'the Laya runtime + mksquashfs'} in "
          f"{time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
