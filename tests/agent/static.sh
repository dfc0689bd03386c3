#!/bin/bash
# The static agent (scripts/build-static-agent.sh: musl, -Dstatic_agent=true) built here, then run
# in an empty root that holds only it and Debian's static busybox (a mount namespace, /proc and
# /dev/null mounted, chroot): no C library, no loader, nothing of this machine's.
. "$SRCDIR/tests/lib/agents.sh"
if ! out=$(bash "$SRCDIR/scripts/build-static-agent.sh" "$T/build-static" 2>&1); then
    fail "the static agent builds (musl-gcc: Debian's musl-tools)" "$out"
    exit 1
fi
static=$(tail -n 1 <<<"$out")
pass "the static agent builds ($static)"
expect_contains "$(file "$static")" "statically linked" "file: statically linked"
run ldd "$static"
expect_contains "$OUT$ERR" "not a dynamic executable" "ldd: not a dynamic executable"
busybox=$(command -v busybox || true)
if [ -z "$busybox" ] || ! file "$busybox" | grep -q "statically linked"; then
    fail "a static busybox for the empty root (Debian's busybox-static)" "busybox: ${busybox:-none}"
    exit 1
fi

root=$T/root
mkdir -p "$root"/{bin,proc,dev,tmp}
cp "$static" "$busybox" "$root/bin/"
ln -s busybox "$root/bin/sh"
: >"$root/dev/null"
run env DDPJ_TESTMARK="$MARK" unshare --mount --fork sh -c \
    'mount -t proc proc "$1/proc" && mount --bind /dev/null "$1/dev/null" &&
     exec chroot "$1" /bin/ddpjob-agent --standalone --nproc-per-node 2 \
         /bin/sh -c "echo rank=\$RANK of \$WORLD_SIZE local=\$LOCAL_RANK"' _ "$root"
expect_eq "$RC" 0 "in the empty root, a two-worker job of sh workers exits 0"
expect_contains "$OUT" "[rank 0] rank=0 of 2 local=0" "rank 0 ran with its environment"
expect_contains "$OUT" "[rank 1] rank=1 of 2 local=1" "rank 1 too"
run env DDPJ_TESTMARK="$MARK" unshare --mount --fork sh -c \
    'mount -t proc proc "$1/proc" && mount --bind /dev/null "$1/dev/null" &&
     exec chroot "$1" /bin/ddpjob-agent --standalone --nproc-per-node 2 /bin/sh -c "[ \$RANK = 1 ] && exit 3; exec sleep 60"' _ "$root"
expect_eq "$RC" 3 "a worker exiting 3 there: the job's status is 3"
expect_contains "$ERR" "job failed (exit 3): rank 1 (node 0, host " "the summary names it"
expect_contains "$ERR" "rank 0 (node 0, host $(hostname), local rank 0) stopped by the agent" "and the other rank was stopped"
expect_no_leftovers "nothing left after the static agent's jobs"
