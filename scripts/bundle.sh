#!/bin/bash
# Builds the release bundle ddpjob-VERSION-linux-ARCH.tar.gz (ARCH: as `uname -m` names it)
# from this checkout (committed files only, as a clean clone has them): the cluster build
# (scripts/build-static.sh: ddpjob, ddpjob-agent and a CPU ddp-train, each fully static against
# musl, so any Linux of that architecture runs them whatever its C library; share/ with templates,
# examples, site profiles, man pages, completions, the modulefiles), SHA256SUMS, test.sh, the
# bundle's own check on the machine it lands on, and install.sh PREFIX, which copies it into a
# tree of one's own and will not replace another version silently. It is the tree `submit --on`
# sends to a cluster of that architecture. ARCH aarch64 on x86_64 is cross-built (Debian's
# gcc-aarch64-linux-gnu; scripts/build-static.sh).
#   scripts/bundle.sh [OUT_DIR [ARCH]]   (default: the current directory and this machine's
#                                         architecture; prints the bundle's path)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "${1:-.}" && pwd)
arch=${2:-$(uname -m)}
version=$(sed -n "s/^  version: '\([^']*\)',$/\1/p" "$src/meson.build")
name=ddpjob-$version-linux-$arch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$src" archive --format=tar --prefix=src/ HEAD | tar -x -C "$work"
echo "bundle: building (static, musl; GPU builds stay with the site's CUDA)" >&2
stage=$work/$name
bash "$work/src/scripts/build-static.sh" "$work/build" "$stage" "$arch"

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
check "ddpjob runs here ($(uname -m), $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-Linux}"))" bin/ddpjob --version
check "ddpjob renders an example with its own templates" bin/ddpjob render share/ddpjob/examples/slurm-2x8.yaml
check "the static agent runs a two-worker job" bin/ddpjob-agent --standalone --nproc-per-node 2 sh -c 'test "$WORLD_SIZE" = 2'
check "ddp-train trains under the agent" bin/ddpjob-agent --standalone --nproc-per-node 2 \
    bin/ddp-train train --synthetic --synthetic-size 512,128 --epochs 1
[ "$failed" = 0 ] && echo "bundle OK: module use $PWD/share/ddpjob/modulefiles; module load ddpjob"
exit "$failed"
TEST
chmod +x "$stage/test.sh"
cat >"$stage/install.sh" <<'INSTALL'
#!/bin/bash
# Copies this bundle into PREFIX (bin/, share/), for a tree of one's own such as
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
cp -R bin share "$prefix/"
echo "installed $mine in $prefix: module use $prefix/share/ddpjob/modulefiles; module load ddpjob"
INSTALL
chmod +x "$stage/install.sh"
(cd "$stage" && find . -type f ! -name SHA256SUMS | sort | xargs sha256sum >SHA256SUMS)
tar -C "$work" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
