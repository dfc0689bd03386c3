{{! The script of one node without a scheduler, run with bash: `ddpjob run SPEC` executes it
    here, and `ddpjob launch SPEC` on each host over SSH (over_ssh), after
      set -- NODE_RANK NNODES MASTER_ADDR MASTER_PORT RUN_ID NPROC [AGENT_OPTION...] -- [ARG...]
    with the script itself as the first line on stdin (base64: it carries the spec's env: and
    setup:, so it is on no command line) and the job token as the second (never on a command line
    or in a file); the agent options come after the spec's (a later --deadline wins), the ARGs
    after its command. The spec's node setup, then the agent: here it becomes this process, so that
    signals reach it directly; over SSH the head closing stdin (Ctrl-C there, or the connection
    dropped) stops it, which stops the job. }}
set -eo pipefail
{{#over_ssh}}
IFS= read -r DDPJOB_TOKEN
export DDPJOB_TOKEN
{{/over_ssh}}
{{> node_setup}}
{{#workdir}}
cd -- {{workdir}}
{{/workdir}}
{{^over_ssh}}
{{! The spec's walltime counts from now here: the checkpoint signal can be tried on one machine. }}
exec {{agent}} --standalone --nproc-per-node {{procs_per_node}} --run-id {{name_quoted}}{{agent_args}} \
    {{#walltime_s}}--deadline +{{walltime_s}} {{/walltime_s}}-- {{command}}
{{/over_ssh}}
{{#over_ssh}}
node_facts=(--node-rank "$1" --nnodes "$2" --master-addr "$3" --master-port "$4" --run-id "$5"
    --nproc-per-node "$6")
shift 6
agent_options=()
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
    agent_options+=("$1")
    shift
done
[ "$#" -eq 0 ] || shift
{{agent}} "${node_facts[@]}"{{agent_args}} {{#walltime_s}}--deadline +{{walltime_s}} {{/walltime_s}}\
    "${agent_options[@]}" -- {{command}} "$@" </dev/null &
agent=$!
# A background list's stdin would be /dev/null: the channel's is handed over explicitly.
{ while IFS= read -r _; do :; done; kill -TERM "$agent" 2>/dev/null; } <&0 &
watch=$!
set +e
wait "$agent"
status=$?
kill "$watch" 2>/dev/null
exit "$status"
{{/over_ssh}}
