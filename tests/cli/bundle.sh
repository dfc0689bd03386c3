#!/bin/bash
# The release bundle (scripts/bundle.sh) built from this checkout, unpacked by a user without
# root, checked by its own test.sh and loaded with the real environment-modules: its ddpjob,
# static agent and ddp-train (with its libraries beside it) run from wherever it lies.
. "$SRCDIR/tests/lib/tap.sh"
if ! bundle=$(bash "$SRCDIR/scripts/bundle.sh" "$T" 2>"$T/bundle.err"); then
    fail "scripts/bundle.sh builds the bundle" "$(tail -n 20 "$T/bundle.err")"
    exit 1
fi
version=$("$DDPJOB" --version | cut -d' ' -f2)
expect_eq "$(basename "$bundle")" "ddpjob-$version-linux-x86_64.tar.gz" "scripts/bundle.sh builds ddpjob-VERSION-linux-x86_64.tar.gz"
home=$(mktemp -d /tmp/ddpjob-bundle.XXXXXX)
at_exit "rm -rf $home"
chmod 755 "$home"
chown nobody: "$home"
as_user() { runuser -u nobody -- env -i PATH=/usr/bin:/bin HOME="$home" "$@"; }
cp "$bundle" "$home/"
chmod 644 "$home/$(basename "$bundle")"
run as_user tar -xzf "$home/$(basename "$bundle")" -C "$home"
expect_eq "$RC" 0 "a user without root unpacks it in their home"
root=$home/ddpjob-$version-linux-x86_64
expect_contains "$(file "$root/bin/ddpjob-agent")" "statically linked" "its agent is static"
run ldd "$root/bin/ddpjob"
expect_lacks "$OUT" "libyaml" "its ddpjob needs no libyaml"
expect_lacks "$OUT" "libssh2" "nor libssh2"
expect_lacks "$OUT" "libcrypto" "nor libcrypto: only the C library"
run as_user "$root/test.sh"
expect_eq "$RC" 0 "its own test.sh passes there"
expect_contains "$OUT" "ok - ddp-train trains under the agent" "ddp-train, with its libraries beside it, trains under the static agent"
run as_user bash -c '. /usr/share/modules/init/bash && module use "$1/share/ddpjob/modulefiles" &&
    module load ddpjob && ddpjob render "$1/share/ddpjob/examples/slurm-2x8.yaml"' _ "$root"
expect_contains "$OUT" "$root/bin/ddpjob-agent" "module load ddpjob from the bundle: its scripts start the bundle's agent"
sed -i 's/^/x/' "$root/share/ddpjob/templates/slurm.sh"
run as_user "$root/test.sh"
expect_eq "$RC" 1 "a file changed after packing: test.sh fails"
expect_contains "$OUT" "not ok - the files are whole" "naming the checksums"
