#!/bin/bash
# Builds the release bundle ddpjob-VERSION-linux-x86_64.tar.gz from this checkout (committed
# files only, as a clean clone has them): bin/ (ddpjob with libyaml, libssh2, jansson, libcrypto and zlib
# linked in, and libcurl with its libraries in lib/, which Debian ships shared only; the static
# ddpjob-agent; ddp-train, CPU build, with the shared libraries it needs in lib/; both find lib/
# through an rpath relative to themselves), share/ (templates,
# examples, site profiles, man pages, completions, the modulefiles), SHA256SUMS, test.sh, the
# bundle's own check on the machine it lands on, and install.sh PREFIX, which copies it into a
# tree of one's own and will not replace another version silently.
#   scripts/bundle.sh [OUT_DIR]   (default: the current directory; prints the bundle's path)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "${1:-.}" && pwd)
version=$(sed -n "s/^  version: '\([^']*\)',$/\1/p" "$src/meson.build")
name=ddpjob-$version-linux-x86_64
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$src" archive --format=tar --prefix=src/ HEAD | tar -x -C "$work"
say() { echo "bundle: $*" >&2; }

say "building (libraries linked statically where Debian ships archives; CPU ddp-train)"
# GPU builds stay with the site's CUDA: its libraries are hundreds of MB and tied to the driver.
# DT_RPATH, not RUNPATH: it is searched for the libraries of the libraries too (libcurl's).
meson setup "$work/build" "$work/src" --prefix=/ -Dprefer_static=true -Dcuda=disabled \
    --buildtype=release -Dc_link_args='-Wl,-rpath,$ORIGIN/../lib -Wl,--disable-new-dtags' >"$work/setup.log" ||
    { cat "$work/setup.log" >&2; exit 1; }
ninja -C "$work/build" cli/ddpjob agent/ddpjob-agent runtime/train/ddp-train >"$work/build.log" ||
    { tail -n 30 "$work/build.log" >&2; exit 1; }
stage=$work/$name
meson install -C "$work/build" --destdir "$stage" --quiet --no-rebuild
say "building the static agent (musl)"
static=$(bash "$work/src/scripts/build-static-agent.sh" "$work/build-static")
cp "$static" "$stage/bin/ddpjob-agent"

# ddpjob's and ddp-train's libraries beside them, all but the C library's own (the node has those).
mkdir -p "$stage/lib"
if libs=$(ldd "$stage/bin/ddpjob" "$stage/bin/ddp-train" | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux[^/]*)\.so'); then
    for lib in $libs; do cp -L "$lib" "$stage/lib/"; done
fi
if LD_LIBRARY_PATH= ldd "$stage/bin/ddp-train" | grep -q 'not found'; then
    say "ddp-train left out: $(ldd "$stage/bin/ddp-train" | grep 'not found' | tr -s ' \n' ' ')"
    rm -f "$stage/bin/ddp-train"
fi

cat >"$stage/test.sh" <<'TEST'
#!/bin/bash
# This bundle's own check, on the machine it lands on: its files whole, each program runs here,
# and a two-worker job under the agent.
set -u
cd "$(dirname "$0")" || exit 1
failed=0
check() { # DESCRIPTION COMMAND...
    local out
    if out=$("${@:2}" 2>&1); then echo "ok - $1"; else echo "not ok - $1"; printf '  %s\n' "$out" | tail -n 5; failed=1; fi
}
check "the files are whole (SHA256SUMS)" sha256sum --quiet -c SHA256SUMS
check "ddpjob runs here (glibc $(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2))" bin/ddpjob --version
check "ddpjob renders an example with its own templates" bin/ddpjob render share/ddpjob/examples/slurm-2x8.yaml
check "the static agent runs a two-worker job" bin/ddpjob-agent --standalone --nproc-per-node 2 sh -c 'test "$WORLD_SIZE" = 2'
if [ -x bin/ddp-train ]; then
    check "ddp-train's libraries are found" sh -c '! ldd bin/ddp-train | grep "not found"'
    check "ddp-train trains under the agent" bin/ddpjob-agent --standalone --nproc-per-node 2 \
        bin/ddp-train train --synthetic --synthetic-size 512,128 --epochs 1
fi
[ "$failed" = 0 ] && echo "bundle OK: module use $PWD/share/ddpjob/modulefiles; module load ddpjob"
exit "$failed"
TEST
chmod +x "$stage/test.sh"
cat >"$stage/install.sh" <<'INSTALL'
#!/bin/bash
# Copies this bundle into PREFIX (bin/, lib/, share/), for a tree of one's own such as
# ~/.local or /g/data/PROJECT/tools/ddpjob. A PREFIX holding another version of ddpjob is left
# alone unless --force says to replace it. PREFIX/share/ddpjob/SHA256SUMS names ddpjob's own
# files there and their checksums (`sha256sum -c` from PREFIX), as a prefix holds other software.
#   ./install.sh PREFIX [--force]
set -euo pipefail
cd "$(dirname "$0")"
[ "$#" -ge 1 ] || { echo "usage: ./install.sh PREFIX [--force]" >&2; exit 2; }
prefix=$1 force=${2:-}
mine=$(bin/ddpjob --version)
if [ -x "$prefix/bin/ddpjob" ] && [ "$force" != --force ]; then
    theirs=$("$prefix/bin/ddpjob" --version 2>/dev/null || echo "an unreadable ddpjob")
    if [ "$theirs" != "$mine" ]; then
        echo "install.sh: $prefix holds $theirs; this bundle is $mine: remove it, or pass --force to replace it" >&2
        exit 1
    fi
fi
mkdir -p "$prefix"
cp -R bin lib share "$prefix/"
grep -E '^[0-9a-f]{64}  \./(bin|lib|share)/' SHA256SUMS | sed 's|  \./|  |' >"$prefix/share/ddpjob/SHA256SUMS"
echo "installed $mine in $prefix: module use $prefix/share/ddpjob/modulefiles; module load ddpjob"
INSTALL
chmod +x "$stage/install.sh"
(cd "$stage" && find . -type f ! -name SHA256SUMS | sort | xargs sha256sum >SHA256SUMS)
tar -C "$work" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
