#!/bin/sh
# Before the runtime is compiled: every header it needs is there, or say which packages to install
# (a compiler error about squashfuse.h says neither). CC and CPPFLAGS as the build uses them.
CC=${CC:-cc}
if ! command -v "$CC" >/dev/null 2>&1; then
    echo "make appimage: no C compiler ($CC). On Debian or Ubuntu, install one with:" >&2
    echo "  sudo apt-get install build-essential" >&2
    exit 1
fi
missing=""
headers=""
# header   Debian/Ubuntu package
for pair in \
    squashfuse/squashfuse.h:libsquashfuse-dev \
    squashfuse/ll.h:libsquashfuse-dev \
    fuse3/fuse_lowlevel.h:libfuse3-dev \
    zstd.h:libzstd-dev \
    zlib.h:zlib1g-dev \
    lzma.h:liblzma-dev \
    lz4.h:liblz4-dev \
    lzo/lzo1x.h:liblzo2-dev
do
    header=${pair%%:*}
    package=${pair#*:}
    # shellcheck disable=SC2086 # CPPFLAGS holds several flags
    # __has_include: whether the header is there, not whether it compiles alone (fuse3's wants
    # FUSE_USE_VERSION defined first)
    if ! printf '#if !__has_include(<%s>)\n#error missing\n#endif\n' "$header" \
            | "$CC" $CPPFLAGS -E -x c - >/dev/null 2>&1; then
        headers="$headers $header"
        case " $missing " in *" $package "*) ;; *) missing="$missing $package" ;; esac
    fi
done
if [ -n "$missing" ]; then
    echo "make appimage: the AppImage runtime needs headers that are not installed:$headers" >&2
    echo "On Debian or Ubuntu, install them with:" >&2
    echo "  sudo apt-get install$missing" >&2
    exit 1
fi
