#!/bin/bash
# The cluster build: ddpjob, ddpjob-agent and a CPU ddp-train linked fully statically against musl
# and the libraries of scripts/build-static-deps.sh, installed with their templates and share
# files into DEST: one tree that runs on any Linux of the build's architecture, whatever its C
# library. It is what the bundle holds and what `submit --on` sends to a cluster.
#   scripts/build-static.sh BUILD_DIR DEST   (DEST: bin/, share/ddpjob/ with its SHA256SUMS)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
[ "$#" = 2 ] || { echo "usage: scripts/build-static.sh BUILD_DIR DEST" >&2; exit 2; }
dir=$(mkdir -p "$1" && cd "$1" && pwd) dest=$(mkdir -p "$2" && cd "$2" && pwd)
deps=$(bash "$src/scripts/build-static-deps.sh")
# Libraries built anew (their recipe changed) are another prefix: the build starts over on them.
[ "$(cat "$dir/deps-prefix" 2>/dev/null)" = "$deps" ] || find "$dir" -mindepth 1 -delete
if [ ! -f "$dir/build.ninja" ]; then
    echo "$deps" >"$dir/deps-prefix"
    # pkg-config sees the musl archives only, never the host's glibc libraries; of the host's
    # headers, the kernel's alone (musl-gcc has none: linux/futex.h).
    kernel=$dir/kernel-headers
    mkdir -p "$kernel"
    ln -sfn /usr/include/linux "$kernel/linux"
    ln -sfn /usr/include/asm-generic "$kernel/asm-generic"
    ln -sfn "/usr/include/$(gcc -print-multiarch)/asm" "$kernel/asm"
    printf "[properties]\npkg_config_libdir = ['%s/lib/pkgconfig']\n[built-in options]\nc_args = ['-isystem', '%s']\n" \
        "$deps" "$kernel" >"$dir/musl.ini"
    CC=musl-gcc meson setup "$dir" "$src" --native-file "$dir/musl.ini" -Dstatic=true \
        -Dcuda=disabled -Donednn=disabled --buildtype=release --prefix=/ >"$dir/setup.log" 2>&1 ||
        { tail -n 30 "$dir/setup.log" >&2; exit 1; }
fi
ninja -C "$dir" >"$dir/ninja.log" 2>&1 || { grep -B2 -A10 -m3 'error' "$dir/ninja.log" >&2; exit 1; }
rm -rf "$dest"
meson install -C "$dir" --destdir "$dest" --quiet --no-rebuild >/dev/null
