#!/bin/bash
# From the laptop, part 1 (issue 56): `ddpjob cluster add|list|check` on a "laptop" (the login
# namespace of tests/cluster/sshd.sh, HOME its client folder) against real sshd hosts logged in
# to as an unprivileged user. The clusters file: written 0600, read only when it is the user's
# own, not a link and not writable by others; every value checked before it reaches ssh or a
# shell. check: the scheduler a login shell finds there (real sbatch and OpenPBS's qstat asked
# their versions), the ddpjob installed, the remote folder's free space and whether it can be
# written; an unknown host key, an address nobody answers at, a key the host refuses and a
# folder the user cannot write are each named, with exit 1. Then a job's folder sent over SFTP
# (upload.h): only what changed, what .ddpjobignore and the defaults leave behind left behind, no
# link followed here or written through there, times kept, modes the user's alone; a folder the user cannot
# make and a filesystem that fills up mid-upload (a loop-mounted image) each named. Last, this
# version installed on the cluster from an installed tree (remote_install.h).
. "$SRCDIR/tests/lib/tap.sh"
SSHD_USER=ddpjlap
. "$SRCDIR/tests/cluster/sshd.sh"
sshd_suite_up 1 "an sshd host (n1) in a network namespace, the laptop on the login host" || exit 1
home=$SSHD_DIR/home/$SSHD_USER
file=$SSHD_DIR/client/.config/ddpjob/clusters.yaml

laptop() { # ddpjob ARGS... on the laptop: RC, OUT, ERR
    run sshd_login timeout -s KILL 60 "$DDPJOB" "$@"
}

laptop cluster add hpc --host n1 --remote-dir '~/ddpjob' --site gadi
expect_eq "$RC:$OUT" "0:cluster hpc added in $file" "cluster add writes the profile and names the file"
expect_eq "$(stat -c %a "$file")" 600 "the clusters file is private (0600)"
laptop cluster add ro --host n1 --port 22 --remote-dir "$SSHD_DIR/ro/jobs"
laptop cluster list
expect_contains "$OUT" "hpc          n1  ~/ddpjob  site gadi" "cluster list: a line per cluster"
expect_contains "$OUT" "ro           n1:22  $SSHD_DIR/ro/jobs" "... with its port where named"
laptop cluster add hpc --host n1 --remote-dir '~/ddpjob'
expect_eq "$RC:$OUT" "0:cluster hpc replaced in $file" "adding a name again replaces it"

# Values that would reach ssh or a shell as something else are refused.
laptop cluster add 'x/y' --host n1 --remote-dir /tmp
expect_eq "$RC" 2 "a cluster name with a slash is refused"
expect_contains "$ERR" "a name is letters, digits" "... saying what a name is"
laptop cluster add evil --host -oProxyCommand=touch --remote-dir /tmp
expect_contains "$RC:$ERR" "2:ddpjob cluster add: cluster evil: host: \"-oProxyCommand=touch\" is no host name" \
    "a host that would be taken for an option is refused"
laptop cluster add rel --host n1 --remote-dir ddpjob
expect_contains "$RC:$ERR" "2:ddpjob cluster add: cluster rel: remote_dir: \"ddpjob\" must be an absolute path or start with ~/" \
    "a relative remote_dir is refused"

# The file is trusted only as the user's own.
chmod 664 "$file"
laptop cluster list
expect_contains "$RC:$ERR" "3:ddpjob cluster: $file: others can write it (mode 0664): not trusted" \
    "a clusters file others can write is not read"
chmod 600 "$file"
mv "$file" "$file.real"
ln -s "$file.real" "$file"
laptop cluster list
expect_contains "$RC:$ERR" "3:ddpjob cluster: $file: a symbolic link: not trusted" "nor a link to one"
rm "$file"
mv "$file.real" "$file"
chown nobody "$file"
laptop cluster list
expect_contains "$RC:$ERR" "3:ddpjob cluster: $file: owned by uid 65534, not by this user: not trusted" \
    "nor one another user owns"
chown root "$file"
cp "$file" "$T/clusters.yaml"
printf 'jump:\n  host: n1\n  remote_dir: /tmp\n  proxy_jump: a,b\n' >>"$file"
laptop cluster list
expect_contains "$RC:$ERR" "3:ddpjob cluster: $file" "a chain of jump hosts is refused"
expect_contains "$ERR" "cluster jump: proxy_jump: \"a,b\": a chain of jump hosts: this ddpjob takes one" "... saying why"
sed -i 's/proxy_jump: a,b/proxy_jump: "-oProxyCommand=touch"/' "$file"
laptop cluster list
expect_contains "$RC:$ERR" "is no host name" "a jump host that would be taken for an option is refused"
cp "$T/clusters.yaml" "$file"

# check: the host's login shell puts OpenPBS on PATH and names a Slurm configuration, as a
# login node's does. Not /usr/local/bin, where the README's first command installs this
# machine's own ddpjob: the host has none until submit --on installs one.
mkdir -p "$SSHD_DIR/etc/slurm"
printf 'ClusterName=laptop\nSlurmctldHost=head\n' >"$SSHD_DIR/etc/slurm/slurm.conf"
printf 'export PATH=/opt/pbs/bin:/usr/bin:/bin SLURM_CONF=%s\n' "$SSHD_DIR/etc/slurm/slurm.conf" >"$home/.bash_profile"
chown "$SSHD_USER:" "$home/.bash_profile"
laptop cluster check hpc
expect_eq "$RC" 0 "cluster check of a reachable host whose folder can be written exits 0" "$OUT" "$ERR"
expect_contains "$OUT" "hpc: logged in as $SSHD_USER at n1:22; its host key is in $SSHD_DIR/client/.ssh/known_hosts" \
    "check says who it logged in as, where, and that the host key is known"
expect_contains "$OUT" "scheduler: Slurm, sbatch at /usr/bin/sbatch (slurm-wlm 22.05" "the real sbatch, found and asked its version"
expect_contains "$OUT" "scheduler: PBS, qsub at /opt/pbs/bin/qsub (pbs_version = 23.06" "OpenPBS's qsub, found on the login PATH"
expect_contains "$OUT" "ddpjob: none installed (submit --on hpc installs this one" "no ddpjob there yet"
expect_contains "$OUT" "remote_dir $home/ddpjob: not there yet (made under $home), " "remote_dir ~/ddpjob, under the user's home"
expect_contains "$OUT" "GiB free, writable" "its free space, and that it can be written"
expect_contains "$OUT" "architecture: $(uname -m) (this ddpjob holds its cluster build, which submit --on sends)" \
    "the login node's architecture, and that this ddpjob has a build for it"
mkdir -p "$home/.local/share/ddpjob/0.1.0/bin"
cp "$DDPJOB" "$home/.local/share/ddpjob/0.1.0/bin/"
chown -R "$SSHD_USER:" "$home/.local"
laptop cluster check hpc
expect_contains "$OUT" "ddpjob: ddpjob $("$DDPJOB" --version | cut -d' ' -f2) at $home/.local/share/ddpjob/0.1.0/bin/ddpjob" \
    "an installed ddpjob is found and asked its version"

mkdir -p "$SSHD_DIR/ro"
laptop cluster check ro
expect_eq "$RC" 1 "a remote_dir the user cannot write: exit 1"
expect_contains "$OUT" "remote_dir $SSHD_DIR/ro/jobs: not there yet (made under $SSHD_DIR/ro), " "... naming where it would be made"
expect_contains "$OUT" "NOT writable by this user" "... and that it cannot be"

: >"$T/known_hosts"
laptop cluster check hpc --known-hosts "$T/known_hosts"
expect_eq "$RC" 1 "an unknown host key: exit 1"
expect_contains "$ERR" "SHA256:" "... naming the key's fingerprint" "$ERR"
laptop cluster check hpc --known-hosts "$T/known_hosts" --accept-new-host-keys
expect_eq "$RC" 0 "--accept-new-host-keys takes it" "$ERR"
expect_contains "$(cat "$T/known_hosts")" "n1 ssh-ed25519 " "... and adds it to known_hosts"

laptop cluster add gone --host 10.80.0.99 --remote-dir /tmp
start=$SECONDS
laptop cluster check gone --connect-timeout 5
expect_eq "$RC" 1 "an address nobody answers at: exit 1"
expect_contains "$ERR" "ddpjob cluster check: gone: " "... naming the cluster: $ERR"
if [ $((SECONDS - start)) -le 15 ]; then pass "... within its deadline ($((SECONDS - start)) s)"; else
    fail "... within its deadline" "$((SECONDS - start)) s"; fi

ssh-keygen -q -t ed25519 -N '' -f "$SSHD_DIR/client/other_key"
laptop cluster add stranger --host n1 --identity "$SSHD_DIR/client/other_key" --remote-dir /tmp
laptop cluster check stranger
expect_eq "$RC" 1 "a key the host refuses: exit 1"
expect_contains "$ERR" "ddpjob cluster check: stranger: " "... naming the cluster and why: $ERR"

# The job's folder sent over SFTP (upload.h, through tests/remote/upload_run.c): what changed
# only, .ddpjobignore's patterns and the defaults (.git/, checkpoints) left behind, links not
# followed, the user's times kept, and modes that keep it the user's alone.
work=$T/work
mkdir -p "$work/data" "$work/.git" "$work/checkpoints"
echo 'print("train")' >"$work/train.py"
printf '#!/bin/sh\necho run\n' >"$work/run.sh"
chmod 755 "$work/run.sh"
head -c 5000 /dev/urandom >"$work/data/x.bin"
echo '[core]' >"$work/.git/config"
echo ckpt >"$work/checkpoints/c.ddpt"
echo big >"$work/big.npy"
echo '*.npy' >"$work/.ddpjobignore"
ln -s /etc/passwd "$work/link"
chmod -R go+rX "$T"
upload() { # ALIAS LOCAL REMOTE: RC, OUT, ERR
    run sshd_login timeout -s KILL 120 "$UPLOAD_RUN" "$@"
}
upload n1 "$work" '~/ddpjob/job1'
expect_eq "$RC:$OUT" "0:uploaded 4 files, 5 KiB; 0 unchanged; left behind: 3 ignored, 1 links or other files" \
    "the first upload sends the 4 files, leaves .git/, checkpoints/ and *.npy behind, and no link"
there=$home/ddpjob/job1
if cmp -s "$work/data/x.bin" "$there/data/x.bin" && cmp -s "$work/train.py" "$there/train.py"; then
    pass "the files arrive whole"; else fail "the files arrive whole" "$(ls -laR "$there")"; fi
expect_eq "$(stat -c '%a %U %Y' "$there/run.sh" "$there/train.py" "$there/data" | tr '\n' ' ')" \
    "700 $SSHD_USER $(stat -c %Y "$work/run.sh") 600 $SSHD_USER $(stat -c %Y "$work/train.py") 700 $SSHD_USER $(stat -c %Y "$there/data") " \
    "each keeps its modification time and is the user's alone there (0755 here: 0700; 0644: 0600; folders 0700)"
expect_eq "$(ls -A "$there" | tr '\n' ' ')" ".ddpjobignore data run.sh train.py " "nothing else is there"
upload n1 "$work" '~/ddpjob/job1'
expect_eq "$RC:$OUT" "0:uploaded 0 files, 0 KiB; 4 unchanged; left behind: 3 ignored, 1 links or other files" \
    "the same folder again: nothing sent"
echo '# changed' >>"$work/train.py"
upload n1 "$work" '~/ddpjob/job1'
expect_contains "$RC:$OUT" "0:uploaded 1 file, 1 KiB; 3 unchanged" "one file changed: exactly that one is sent"
expect_eq "$(tail -n 1 "$there/train.py")" "# changed" "... and it is the new one"

mkdir -p "$home/ddpjob/job2" "$T/outside"
ln -s "$T/outside" "$home/ddpjob/job2/data"
chown -h "$SSHD_USER:" "$home/ddpjob/job2" "$home/ddpjob/job2/data"
upload n1 "$work" '~/ddpjob/job2'
expect_eq "$RC" 1 "a link where a folder goes, on the cluster: refused"
expect_contains "$ERR" "ddpjob/job2/data is there and is no folder (a link): not written through" "... saying so" "$ERR"
expect_eq "$(ls -A "$T/outside")" "" "nothing written through the link"

upload n1 "$work" "$SSHD_DIR/ro/jobs"
expect_eq "$RC" 1 "a remote folder the user cannot make: refused"
expect_contains "$ERR" "cannot make the folder $SSHD_DIR/ro/jobs: permission denied" "... naming it and why" "$ERR"

# A full filesystem: a 2 MiB ext4 image mounted in the host's own mount namespace.
truncate -s 2M "$T/full.img"
mkfs.ext4 -q -F "$T/full.img"
mkdir -p "$home/full"
sshd_mnt=/proc/$(cat "$SSHD_DIR/run/sshd-n1.pid")/ns/mnt
if nsenter --mount="$sshd_mnt" mount -o loop "$T/full.img" "$home/full"; then
    at_exit "nsenter --mount=$sshd_mnt umount $home/full"
    nsenter --mount="$sshd_mnt" chown "$SSHD_USER:" "$home/full"
    head -c 3000000 /dev/urandom >"$work/data/big.bin"
    upload n1 "$work" '~/full/job'
    expect_eq "$RC" 1 "a filesystem that fills up mid-upload: exit 1"
    expect_contains "$ERR" "cannot write full/job/data/big.bin: the host refused" "... naming the file it could not write" "$ERR"
    expect_contains "$ERR" "(uploaded " "... and what had been sent by then"
    expect_eq "$(nsenter --mount="$sshd_mnt" find "$home/full" -name '*.ddpjob-upload')" "" \
        "no part-written file left there"
    rm "$work/data/big.bin"
else
    fail "a loop-mounted 2 MiB filesystem on the host" "mount -o loop failed"
fi

# A tree that grows while it is sent (the remote folder mounted inside it) is walked once, before
# anything is sent: one nested past any job's depth is refused, naming it.
deep=$T/deep
mkdir -p "$deep/$(printf 'd/%.0s' $(seq 70))"
chmod -R go+rX "$deep"
upload n1 "$deep" '~/ddpjob/deep'
expect_eq "$RC" 1 "a folder nested 70 deep (a loop through a mount): refused"
expect_contains "$ERR" "folders nested deeper than 64: not a job's folder" "... saying why" "$ERR"
expect_eq "$(ls -d "$home/ddpjob/deep" 2>/dev/null)" "" "... before anything was sent"

# This version installed on the cluster (remote_install.h) from the cluster build for the login
# node's architecture (PREFIX/lib/ddpjob/cluster/ARCH) in an installed tree that holds other
# software too: only the files its share/ddpjob/SHA256SUMS lists are sent, checked there, then
# put in place in ~/.local/share/ddpjob/VERSION; a second time nothing is sent; a version changed
# there is moved aside and installed again.
prefix=$T/prefix
version=$("$DDPJOB" --version | cut -d' ' -f2)
arch=$(uname -m)
# cluster_tree ARCH DDPJOB: PREFIX's cluster build for ARCH, with DDPJOB as its bin/ddpjob.
cluster_tree() {
    local tree=$prefix/lib/ddpjob/cluster/$1
    rm -rf "$prefix/lib/ddpjob/cluster"
    mkdir -p "$tree/bin" "$tree/share/ddpjob/templates"
    cp "$2" "$tree/bin/ddpjob"
    cp "$AGENT" "$tree/bin/"
    cp "$SRCDIR/templates/slurm.sh" "$tree/share/ddpjob/templates/"
    (cd "$tree" && sha256sum bin/ddpjob bin/ddpjob-agent share/ddpjob/templates/slurm.sh >share/ddpjob/SHA256SUMS)
    chmod -R go+rX "$prefix"
}
mkdir -p "$prefix/bin"
echo 'not ours' >"$prefix/bin/other-tool"
rm -rf "$home/.local/share/ddpjob"
other=aarch64
[ "$arch" = aarch64 ] && other=x86_64
# install_refused WHAT MESSAGE SAID NOTHING_LEFT: the install fails (WHAT), its stderr has MESSAGE
# (SAID), and nothing of it is left there (NOTHING_LEFT).
install_refused() {
    run sshd_login timeout -s KILL 120 "$UPLOAD_RUN" --install n1 "$prefix" "$version"
    expect_eq "$RC" 1 "$1"
    expect_contains "$ERR" "$2" "$3"
    expect_eq "$(ls -A "$home/.local/share/ddpjob" 2>/dev/null)" "" "$4"
}
cluster_tree "$other" "$DDPJOB"
install_refused "a cluster of an architecture the install holds no build for: refused" \
    "the cluster is $arch; this ddpjob holds cluster builds for $other ($prefix/lib/ddpjob/cluster)" \
    "... naming both architectures and where the builds are" "... before anything was sent"
# A build that does not run there (the laptop's own, linked against libraries the cluster lacks).
printf '#!/bin/sh\necho "ddpjob: error while loading shared libraries: libjansson.so.4: cannot open shared object file" >&2\nexit 127\n' >"$T/ddpjob-dynamic"
chmod 755 "$T/ddpjob-dynamic"
cluster_tree "$arch" "$T/ddpjob-dynamic"
install_refused "a build that does not start there: refused" \
    "does not run there: bin/ddpjob --version there said: ddpjob: error while loading shared libraries: libjansson.so.4" \
    "... saying what the cluster said" "... and nothing half-installed is left"
cluster_tree "$arch" "$DDPJOB"
run sshd_login timeout -s KILL 120 "$UPLOAD_RUN" --install n1 "$prefix" "$version"
expect_contains "$RC:$OUT" "0:installed: uploaded 4 files" "the install sends the 3 files listed and the list itself"
installed=$home/.local/share/ddpjob/$version
expect_eq "$(cd "$installed" 2>&1 && find . -type f | sort | tr '\n' ' ')" \
    "./bin/ddpjob ./bin/ddpjob-agent ./share/ddpjob/SHA256SUMS ./share/ddpjob/templates/slurm.sh " \
    "in ~/.local/share/ddpjob/$version, nothing else of the prefix (other-tool stays home)"
expect_eq "$(ls -d "$home/.local/share/ddpjob/"*.part 2>/dev/null)" "" "no part-sent folder left"
run sshd_login timeout -s KILL 120 "$UPLOAD_RUN" --install n1 "$prefix" "$version"
expect_eq "$RC:$OUT" "0:already installed: uploaded 0 files, 0 KiB; 0 unchanged" "a second time: there and whole, nothing sent"
echo x >>"$installed/share/ddpjob/templates/slurm.sh"
run sshd_login timeout -s KILL 120 "$UPLOAD_RUN" --install n1 "$prefix" "$version"
expect_contains "$RC:$OUT" "0:installed: uploaded 4 files" "a file changed there: installed again"
expect_contains "$ERR" "ddpjob/$version was not whole, or did not run there: moved aside" "... saying the old one was moved aside"
expect_eq "$(ls -d "$installed".broken-* | wc -l)" 1 "... where it is kept"
if sshd_login runuser -u "$SSHD_USER" -- "$installed/bin/ddpjob" --version >/dev/null; then pass "the installed ddpjob runs"; else fail "the installed ddpjob runs"; fi
