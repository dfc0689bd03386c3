#!/bin/bash
# The command line itself: version, help, usage errors, exit codes, --template, the nodes helper.
. "$SRCDIR/tests/lib/tap.sh"
cd "$T" || exit 1

run "$DDPJOB" --version
expect_eq "$OUT" "ddpjob $(sed -n "s/^  version: '\(.*\)',$/\1/p" "$SRCDIR/meson.build")" "--version prints the project version"
run "$DDPJOB" --help
expect_eq "$RC" 0 "--help exits 0"
expect_contains "$OUT" "render     print the job script for a spec (the dry run)" "--help lists the commands"
for cmd in validate render submit nodes; do
    run "$DDPJOB" "$cmd" --help
    expect_eq "$RC" 0 "$cmd --help exits 0"
    expect_contains "$OUT" "usage: ddpjob $cmd" "$cmd --help shows its usage"
done
run "$DDPJOB"
expect_eq "$RC" 2 "no command: exit 2"
run "$DDPJOB" frobnicate
expect_eq "$RC" 2 "unknown command: exit 2"
expect_contains "$ERR" 'unknown command "frobnicate"' "and it is named"
run "$DDPJOB" render
expect_eq "$RC" 2 "render without a spec: exit 2"
run "$DDPJOB" render "$SRCDIR/share/examples/gadi-pbs.yaml" --scheduler lsf
expect_eq "$RC" 2 "--scheduler lsf: exit 2"
expect_contains "$ERR" '--scheduler: expected pbs, slurm or sge, got "lsf"' "and the value is named"
# The usage and the completion name the schedulers from the seam's table.
run "$DDPJOB" render --help
expect_contains "$OUT" "--scheduler pbs|slurm|sge" "render's usage names the schedulers"
completed=$(bash -c '. "$1/share/completions/ddpjob.bash"; COMP_WORDS=("$2" submit --scheduler "")
    COMP_CWORD=3; _ddpjob; echo "${COMPREPLY[*]}"' _ "$SRCDIR" "$DDPJOB")
expect_eq "$completed" "pbs slurm sge" "--scheduler completes to them"

# A site's own template.
spec=$SRCDIR/share/examples/slurm-2x8.yaml
printf '#!/bin/bash\n#SBATCH --job-name={{name}}\n#SBATCH --reservation=site\n{{#env}}\nexport {{key}}={{value}}\n{{/env}}\n' >site.sh
run "$DDPJOB" render "$spec" --template site.sh
expect_eq "$OUT" '#!/bin/bash
#SBATCH --job-name=llm-pretrain
#SBATCH --reservation=site
export NCCL_DEBUG=WARN
export OMP_NUM_THREADS=8' "--template renders a site's template"
printf 'line one\n#SBATCH --x={{nmae}}\n' >typo.sh
run "$DDPJOB" render "$spec" --template typo.sh -o out.sh
expect_eq "$RC" 3 "an unknown template variable: exit 3"
expect_eq "$ERR" 'ddpjob: typo.sh:2: unknown variable "nmae"' "names the template line"
expect_no_file out.sh "and writes nothing"
run "$DDPJOB" render "$spec" --template /nonexistent.sh
expect_eq "$RC" 3 "a missing template: exit 3"
run env DDPJOB_TEMPLATE_DIR="$T" "$DDPJOB" render "$spec"
expect_contains "$ERR" "template slurm.sh not found (looked in $T); set DDPJOB_TEMPLATE_DIR" "DDPJOB_TEMPLATE_DIR is honoured"
run "$DDPJOB" render "$spec" -o "$T/nodir/x.sh"
expect_eq "$RC" 3 "an unwritable -o: exit 3"
run "$DDPJOB" render "$spec" -o ok.sh
expect_eq "$(stat -c %a ok.sh)" 700 "-o writes an executable script, private (the spec's env: may hold secrets)"

# The hostlist helper the scripts call.
run "$DDPJOB" nodes --slurm 'gpu[01-02],login'
expect_eq "$OUT" 'gpu01
gpu02
login' "nodes --slurm expands"
run "$DDPJOB" nodes --slurm 'n1,n3,n4,n5' --compress
expect_eq "$OUT" 'n[1,3-5]' "nodes --compress"
printf 'a\na\nb\nb\nc\n' >nf
run "$DDPJOB" nodes --nodefile nf --with-index
expect_eq "$OUT" '0 a
2 b
4 c' "nodes --nodefile --with-index"
run "$DDPJOB" nodes --slurm 'n[3-1]'
expect_eq "$RC" 3 "a malformed hostlist: exit 3"
expect_contains "$ERR" 'range "3-1" runs backwards' "and says what is wrong"
run "$DDPJOB" nodes --slurm a --nodefile nf
expect_eq "$RC" 2 "--slurm and --nodefile together: exit 2"
