#!/bin/bash
# The release bundle (scripts/bundle.sh) built from this checkout, unpacked by a user without
# root, checked by its own test.sh and loaded with the real environment-modules: its ddpjob,
# agent and ddp-train, all static, run from wherever it lies.
. "$SRCDIR/tests/lib/tap.sh"
if ! bundle=$(bash "$SRCDIR/scripts/bundle.sh" "$T" 2>"$T/bundle.err"); then
    fail "scripts/bundle.sh builds the bundle" "$(tail -n 20 "$T/bundle.err")"
    exit 1
fi
version=$("$DDPJOB" --version | cut -d' ' -f2)
expect_eq "$(basename "$bundle")" "ddpjob-$version-linux-$(uname -m).tar.gz" "scripts/bundle.sh builds ddpjob-VERSION-linux-ARCH.tar.gz (this machine's, $(uname -m))"
home=$(mktemp -d /tmp/ddpjob-bundle.XXXXXX)
at_exit "rm -rf $home"
chmod 755 "$home"
chown nobody: "$home"
as_user() { runuser -u nobody -- env -i PATH=/usr/bin:/bin HOME="$home" "$@"; }
cp "$bundle" "$home/"
chmod 644 "$home/$(basename "$bundle")"
run as_user tar -xzf "$home/$(basename "$bundle")" -C "$home"
expect_eq "$RC" 0 "a user without root unpacks it in their home"
root=$home/ddpjob-$version-linux-$(uname -m)
for prog in ddpjob ddpjob-agent ddp-train; do
    expect_contains "$(file "$root/bin/$prog")" "statically linked" "its $prog is static (no library of this machine's, nor its C library)"
done
run ldd "$root/bin/ddpjob"
expect_contains "$OUT$ERR" "not a dynamic executable" "ldd agrees"
expect_eq "$(LC_ALL=C ls "$root")" "$(printf 'SHA256SUMS\nbin\ninstall.sh\nshare\ntest.sh')" "no lib/: nothing beside the programs"
run as_user "$root/test.sh"
expect_eq "$RC" 0 "its own test.sh passes there"
expect_eq "$(grep -x 'ok - ddp-train trains under the agent' <<<"$OUT")" "ok - ddp-train trains under the agent" \
    "its ddp-train trains under its agent"
run as_user bash -c '. /usr/share/modules/init/bash && module use "$1/share/ddpjob/modulefiles" &&
    module load ddpjob && ddpjob render "$1/share/ddpjob/examples/slurm-2x8.yaml"' _ "$root"
expect_contains "$OUT" "$root/bin/ddpjob-agent" "module load ddpjob from the bundle: its scripts start the bundle's agent"
lmod=/opt/lmod/usr/share/lmod/lmod/libexec/lmod
run as_user bash -c 'export MODULEPATH=$1/share/ddpjob/modulefiles && eval "$("$2" bash load ddpjob)" &&
    echo "ddpjob=$(command -v ddpjob) root=$DDPJOB_ROOT"' _ "$root" "$lmod"
expect_eq "$OUT" "ddpjob=$root/bin/ddpjob root=$root" "and with the real Lmod (unpacked in /opt/lmod by install-test-deps)"
run as_user "$root/install.sh" "$home/tools/ddpjob"
expect_eq "$RC" 0 "its install.sh copies it into a prefix of the user's"
expect_contains "$OUT" "installed ddpjob $version in $home/tools/ddpjob" "and says where"
run as_user bash -c 'cd "$1" && sha256sum --quiet -c share/ddpjob/SHA256SUMS && grep -c "  bin/ddpjob" share/ddpjob/SHA256SUMS' _ "$home/tools/ddpjob"
expect_eq "$RC:$OUT" "0:2" "the prefix's share/ddpjob/SHA256SUMS checks ddpjob's own files there (bin/ddpjob and bin/ddpjob-agent among them)"
run as_user "$home/tools/ddpjob/bin/ddpjob" render "$home/tools/ddpjob/share/ddpjob/examples/slurm-2x8.yaml"
expect_contains "$OUT" "$home/tools/ddpjob/bin/ddpjob-agent" "the installed copy's scripts start its own agent"
printf '#!/bin/sh\necho ddpjob 0.0.9\n' >"$home/tools/ddpjob/bin/ddpjob"
run as_user "$root/install.sh" "$home/tools/ddpjob"
expect_eq "$RC" 1 "over another version, install.sh refuses"
expect_contains "$ERR" "holds ddpjob 0.0.9; this bundle is ddpjob $version: remove it, or pass --force" "naming both versions and the way out"
run as_user "$root/install.sh" "$home/tools/ddpjob" --force
expect_eq "$RC/$("$home/tools/ddpjob/bin/ddpjob" --version)" "0/ddpjob $version" "--force replaces it"
sed -i 's/^/x/' "$root/share/ddpjob/templates/slurm.sh"
run as_user "$root/test.sh"
expect_eq "$RC" 1 "a file changed after packing: test.sh fails"
expect_contains "$OUT" "not ok - the files are whole" "naming the checksums"

# The aarch64 bundle (the newest GPU systems, GH200, are aarch64), cross-built here with Debian's
# gcc-aarch64-linux-gnu and run under qemu-user (binfmt_misc, registered by install-test-deps as
# systemd-binfmt would): its ddpjob, and a one-node `ddpjob run` of its agent and ddp-train.
[ "$(uname -m)" = x86_64 ] || exit 0
if ! a64=$(bash "$SRCDIR/scripts/bundle.sh" "$T" aarch64 2>"$T/bundle-a64.err"); then
    fail "scripts/bundle.sh OUT aarch64 builds the aarch64 bundle" "$(tail -n 20 "$T/bundle-a64.err")"
    exit 1
fi
expect_eq "$(basename "$a64")" "ddpjob-$version-linux-aarch64.tar.gz" "scripts/bundle.sh OUT aarch64 builds ddpjob-VERSION-linux-aarch64.tar.gz"
cp "$a64" "$home/"
chmod 644 "$home/$(basename "$a64")"
run as_user tar -xzf "$home/$(basename "$a64")" -C "$home"
a64root=$home/ddpjob-$version-linux-aarch64
for prog in ddpjob ddpjob-agent ddp-train; do
    expect_contains "$(file "$a64root/bin/$prog")" "ARM aarch64, version 1 (SYSV), statically linked" "its $prog is aarch64, static"
done
expect_eq "$(as_user "$a64root/bin/ddpjob" --version 2>&1)" "ddpjob $version" "its ddpjob runs (under qemu-user)"
mkdir -p "$home/a64job"
cat >"$home/a64job/job.yaml" <<SPEC
name: a64
nodes: 1
procs_per_node: 2
command: [$a64root/bin/ddp-train, train, --synthetic, --synthetic-size, "256,64", --epochs, "1"]
SPEC
chown -R nobody: "$home/a64job"
run as_user sh -c 'cd "$1" && "$2/bin/ddpjob" run job.yaml' _ "$home/a64job" "$a64root"
expect_eq "$RC" 0 "a one-node ddpjob run: its agent and two of its ddp-train workers" "$OUT" "$ERR"
expect_contains "$OUT" "trained after 1 of 1 epochs (2 steps, 2 ranks)" "... which train together"
