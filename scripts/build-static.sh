#!/bin/bash
# The cluster build: ddpjob, ddpjob-agent and a CPU ddp-train linked fully statically against musl
# and the libraries of scripts/build-static-deps.sh, installed with their templates and share
# files into DEST: one tree that runs on any Linux of its architecture, whatever its C library.
# It is what the bundle holds and what `submit --on` sends to a cluster. ARCH (as uname -m names
# it) is this machine's by default; another (aarch64 on x86_64) is cross-built with Debian's
# gcc-ARCH-linux-gnu, and meson runs what it must through qemu-user where it is.
#   scripts/build-static.sh BUILD_DIR DEST [ARCH]   (DEST: bin/, share/ddpjob/ with its SHA256SUMS)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
[ "$#" = 2 ] || [ "$#" = 3 ] || { echo "usage: scripts/build-static.sh BUILD_DIR DEST [ARCH]" >&2; exit 2; }
arch=${3:-$(uname -m)}
dir=$(mkdir -p "$1" && cd "$1" && pwd) dest=$(mkdir -p "$2" && cd "$2" && pwd)
deps=$(bash "$src/scripts/build-static-deps.sh" "$arch")
# Libraries built anew (their recipe changed) are another prefix: the build starts over on them.
[ "$(cat "$dir/deps-prefix" 2>/dev/null)" = "$deps" ] || find "$dir" -mindepth 1 -delete
if [ ! -f "$dir/build.ninja" ]; then
    echo "$deps" >"$dir/deps-prefix"
    # pkg-config sees the musl archives only, never the host's glibc libraries; of the host's
    # headers, the kernel's alone (musl-gcc has none: linux/futex.h), the target's.
    kernel=$dir/kernel-headers linux=/usr/include asm=/usr/include/$(gcc -print-multiarch)/asm
    [ "$arch" = "$(uname -m)" ] || linux=/usr/$arch-linux-gnu/include asm=/usr/$arch-linux-gnu/include/asm
    mkdir -p "$kernel"
    ln -sfn "$linux/linux" "$kernel/linux"
    ln -sfn "$linux/asm-generic" "$kernel/asm-generic"
    ln -sfn "$asm" "$kernel/asm"
    machine=(--native-file "$dir/musl.ini")
    {
        printf "[properties]\npkg_config_libdir = ['%s/lib/pkgconfig']\n" "$deps"
        # -static for meson's own checks too: a cross build runs them (under qemu), and musl's
        # dynamic loader for another architecture is nowhere here.
        printf "[built-in options]\nc_args = ['-isystem', '%s']\nc_link_args = ['-static']\n" "$kernel"
        if [ "$arch" != "$(uname -m)" ]; then
            machine=(--cross-file "$dir/musl.ini")
            printf "[binaries]\npkgconfig = 'pkg-config'\nc = '%s/musl/bin/musl-gcc'\nar = '%s-linux-gnu-ar'\nstrip = '%s-linux-gnu-strip'\n" \
                "$deps" "$arch" "$arch"
            ! command -v "qemu-$arch-static" >/dev/null || printf "exe_wrapper = 'qemu-%s-static'\n" "$arch"
            printf "[host_machine]\nsystem = 'linux'\ncpu_family = '%s'\ncpu = '%s'\nendian = 'little'\n" "$arch" "$arch"
        fi
    } >"$dir/musl.ini"
    CC=musl-gcc meson setup "$dir" "$src" "${machine[@]}" -Dstatic=true \
        -Dcuda=disabled -Donednn=disabled --buildtype=release --prefix=/ >"$dir/setup.log" 2>&1 ||
        { tail -n 30 "$dir/setup.log" >&2; exit 1; }
fi
ninja -C "$dir" >"$dir/ninja.log" 2>&1 || { grep -B2 -A10 -m3 'error' "$dir/ninja.log" >&2; exit 1; }
rm -rf "$dest"
meson install -C "$dir" --destdir "$dest" --quiet --no-rebuild >/dev/null
