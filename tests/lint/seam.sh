#!/bin/bash
# The scheduler seam (cli/sched/sched.h, and the nodes' runtime/job/node_source.c): outside them
# and templates/, no C file names a scheduler in its code (comments left out): not a row's name,
# its programs or its query's sources, taken from the rows themselves, so a new row is checked
# as it lands. The files not yet behind the seam are listed below with what they still hold; one
# that names none any more must leave the list, so the list only shrinks.
. "$SRCDIR/tests/lib/tap.sh"
cd "$SRCDIR" || exit 1

declare -A not_yet=(
    [cli/spec/spec.h]="the spec's pbs:, slurm: and sge: blocks"
    [cli/spec/spec.c]="the spec's pbs:, slurm: and sge: blocks, parsed"
    [cli/spec/site.h]="a site profile's PBS and Grid Engine fields (pbs_server, pbs_resources, sge_pe)"
    [cli/spec/site.c]="a site profile's PBS and Grid Engine fields, parsed"
    [cli/spec/site_rules.c]="a site's rules on the pbs: and sge: blocks (jobfs, storage, pe)"
    [cli/spec/site_detect.c]="a site recognised by the spec's pbs: fields"
    [cli/spec/spec_container.c]="pyxis runs under srun only (a container runtime's fact)"
    [cli/commands/spec_loading.c]="the pbs:/slurm: blocks' exclusive; PBS and Slurm read a bare walltime apart"
    [cli/commands/cmd_nodes.c]="the node list from a Slurm hostlist or a PBS node file"
    [cli/commands/cmd_pbs_agents.c]="the agents started as tasks of a PBS or Grid Engine job"
    [cli/commands/commands.h]="pbs-agents, the command"
    [cli/commands/main.c]="pbs-agents and nodes, in the command table"
    [cli/commands/cmd_launch.c]="its help names the node files it reads"
    [agent/supervision/options.c]="its help says where the nodes come from"
    [runtime/pg/pg.c]="ranks and the master from srun's variables"
    [runtime/train/commands/main.c]="its help names srun's variables"
)

# The words a row says itself by: its name, its programs, its query's sources.
mapfile -t words < <(sed -nE 's/^ *\.(name|submit_program|cancel_program) = "([a-z]+)".*/\2/p
                              s/^ *\.sources = \{(.*)\},?/\1/p' cli/sched/sched_*.c |
    tr -d '" ' | tr ',' '\n' | sed '/^$/d' | sort -u)
if [ "${#words[@]}" -ge 6 ]; then
    pass "the rows say themselves by ${words[*]}"
else
    fail "the rows say themselves by several words" "found: ${words[*]}"
fi
# A word not inside a longer one (PBS_JOBID and sbatch_args name a scheduler, cblas_sgemm not).
pattern="(^|[^a-z])($(IFS='|'; echo "${words[*]}"))([^a-z]|\$)"

naming=()
while read -r f; do
    if perl -0777 -pe 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g' "$f" | grep -qiE "$pattern"; then
        naming+=("$f")
    fi
done < <(git ls-files 'cli/*.[ch]' 'agent/*.[ch]' 'runtime/*.[ch]' 'runtime/*.cu' |
    grep -v -e '^cli/sched/' -e '^runtime/job/node_source\.')

outside=()
for f in "${naming[@]}"; do
    [ -n "${not_yet[$f]:-}" ] || outside+=("$f")
done
if [ "${#outside[@]}" = 0 ]; then
    pass "no file outside the seam names a scheduler, bar the ${#not_yet[@]} listed"
else
    fail "no file outside the seam names a scheduler, bar those listed" \
        "these do (go through the rows, sched.h, node_source.h): ${outside[*]}"
fi

gone=()
for f in "${!not_yet[@]}"; do
    printf '%s\n' "${naming[@]}" | grep -qxF "$f" || gone+=("$f")
done
if [ "${#gone[@]}" = 0 ]; then
    pass "every listed file still names one (the list only shrinks)"
else
    fail "every listed file still names one (the list only shrinks)" \
        "these name none now: take them off the list: ${gone[*]}"
fi
