#!/bin/bash
# Hostile values in a spec reach the program as literal text and are never executed: the
# rendered script is run for real under bash (Slurm-style environment, srun stand-in running
# the one task here) and the agent stand-in records exactly what it received.
. "$SRCDIR/tests/lib/tap.sh"
cd "$T" || exit 1

make_bindir "$T/bin" "$T/rec"
mkdir -p "$T/path" "$T/wd dir \$(touch pwned-wd)"
cat >"$T/path/srun" <<'SHIM'
#!/bin/bash
# srun OPTIONS... PROGRAM ARGS: one node here, so run the task once as node 0.
while [ "${1#--}" != "$1" ]; do shift; done
SLURM_NODEID=0 SLURM_PROCID=0 exec "$@"
SHIM
cat >"$T/path/module" <<'SHIM'
#!/bin/bash
printf '%s\n' "$@" >>"$MODULE_LOG"
SHIM
chmod +x "$T/path/srun" "$T/path/module"

# Each value tries a different way out of its quotes.
cat >job.yaml <<'SPEC'
name: "x$(touch${IFS}pwned-name)`touch${IFS}pwned-tick`;id"
scheduler: slurm
nodes: 1
modules: ["gcc/12; touch pwned-module", "$(touch pwned-module2)"]
env:
  SUBST: "$(touch pwned-env)"
  TICKS: "`touch pwned-env2`"
  QUOTES: "it's \"quoted\" '$HOME'"
  NEWLINE: "line1\nline2; touch pwned-nl"
  SEMI: "a; touch pwned-semi"
  BACKSLASH: "ends with \\"
workdir: "wd dir $(touch pwned-wd)"
command: ["printf", "$(touch pwned-cmd)", "`touch pwned-cmd2`", "a;b", "it's", "new\nline", "*", "$HOME", ""]
SPEC
run "$DDPJOB" render job.yaml --bindir "$T/bin" -o job.sbatch
expect_eq "$RC" 0 "a spec full of shell metacharacters renders"
if msg=$(bash -n job.sbatch 2>&1); then pass "bash -n accepts it"; else fail "bash -n accepts it" "$msg"; fi
if msg=$(shellcheck job.sbatch 2>&1); then pass "shellcheck accepts it"; else fail "shellcheck accepts it" "$msg"; fi
expect_contains "$(grep -- --job-name job.sbatch)" '#SBATCH --job-name=x$(touch${IFS}pwned-name)`touch${IFS}pwned-tick`;id' \
    "the job name reaches the directive literally"

run env PATH="$T/path:$PATH" MODULE_LOG="$T/module.log" SLURM_JOB_NODELIST=localhost SLURM_JOB_ID=77 \
    bash job.sbatch
expect_eq "$RC" 0 "the script runs"
leaks=$(find "$T" -name 'pwned*' | sort)
expect_eq "$leaks" "" "no value was executed"

# Setup runs in the batch shell and again on each node (one node here): two rounds.
expect_eq "$(cat "$T/module.log")" 'load
gcc/12; touch pwned-module
load
$(touch pwned-module2)
load
gcc/12; touch pwned-module
load
$(touch pwned-module2)' "module names arrive as single literal arguments"

want_argv='printf
$(touch pwned-cmd)
`touch pwned-cmd2`
a;b
it'"'"'s
new\nline
*
$HOME

END'
got_argv=$(sed -n '/^--$/,$p' "$T/rec/agent.0.argv" | tail -n +2; echo END)
expect_eq "$got_argv" "$want_argv" "command arguments arrive exactly as written (an empty one too)"

env_file=$T/rec/agent.0.env
check_env() {
    local got
    got=$(env -i bash -c 'while IFS= read -r -d "" kv; do [ "${kv%%=*}" = "$1" ] && printf "%s" "${kv#*=}"; done <"$2"' _ "$1" "$3")
    expect_eq "$got" "$2" "env $1 arrives literally"
}
# Record the environment NUL-separated for an exact comparison, newlines included.
sed -i 's/^env >"\$out.env"$/env -0 >"$out.env"/' "$T/bin/ddpjob-agent"
rm -rf "$T/rec"/*
run env PATH="$T/path:$PATH" MODULE_LOG="$T/module.log" SLURM_JOB_NODELIST=localhost SLURM_JOB_ID=77 \
    bash job.sbatch
check_env SUBST '$(touch pwned-env)' "$env_file"
check_env TICKS '`touch pwned-env2`' "$env_file"
check_env QUOTES "it's \"quoted\" '\$HOME'" "$env_file"
check_env NEWLINE $'line1\nline2; touch pwned-nl' "$env_file"
check_env SEMI 'a; touch pwned-semi' "$env_file"
check_env BACKSLASH 'ends with \' "$env_file"
expect_eq "$(cat "$T/rec/agent.0.pwd")" "$T/wd dir \$(touch pwned-wd)" "the workdir is used literally"
expect_eq "$(find "$T" -name 'pwned*')" "" "still nothing executed"
