# bash completion for ddpjob
_ddpjob() {
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        mapfile -t COMPREPLY < <(compgen -W "validate render submit status logs report cancel list wait run dev shell launch doctor cluster fetch setup-nodes nodes notify pbs-agents node-agents dev-hold dev-shell-serve --help --version" -- "$cur")
        return
    fi
    case $prev in
    --scheduler)
        # The schedulers ddpjob has, as render's usage names them.
        local names
        names=$("${COMP_WORDS[0]}" render --help 2>/dev/null |
            sed -n 's/.*--scheduler \([a-z|]*\)\].*/\1/p' | head -n 1 | tr '|' ' ')
        mapfile -t COMPREPLY < <(compgen -W "$names" -- "$cur")
        return
        ;;
    -o | --output | --template | --nodefile | --hostfile | --ssh-config | --known-hosts | --node-script | --login-identity | --identity) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
    --bindir | --workdir) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
    --site)
        # The profiles a site: or --site finds by name: the user's own and the installed ones.
        local dir file names=
        for dir in "${DDPJOB_SITE_DIR:-}" "${XDG_CONFIG_HOME:-$HOME/.config}/ddpjob/sites" \
            "$(dirname "$(command -v ddpjob)")/../share/ddpjob/sites"; do
            for file in "$dir"/*.yaml; do
                [ -e "$file" ] && file=${file##*/} && names+=" ${file%.yaml}"
            done
        done
        mapfile -t COMPREPLY < <(compgen -W "$names" -- "$cur")
        return
        ;;
    esac
    case ${COMP_WORDS[1]} in
    validate) opts="--scheduler --site --set --help" ;;
    render) opts="--scheduler --site --output --template --bindir --set --trial --pack --help" ;;
    submit) opts="--scheduler --site --dry-run --template --bindir --set --trial --after --pack --retry-failed --on --max-upload --accept-new-host-keys --connect-timeout --ssh-config --known-hosts --help" ;;
    run) opts="--nproc-per-node --bindir --set --trial --in --wait --on --help" ;;
    dev) opts="stop --idle --wait-for --port --wait --scheduler --site --set --bindir --on --help" ;;
    launch) opts="--hosts --hostfile --nodefile --node-script --nproc-per-node --bindir --workdir --master-port --run-id --deadline --requeue-count --spares --agent-option --connect-timeout --accept-new-host-keys --ssh-config --known-hosts --help" ;;
    cluster) opts="add list check --host --user --port --identity --proxy-jump --remote-dir --remote-share --site --accept-new-host-keys --connect-timeout --ssh-config --known-hosts --help" ;;
    setup-nodes) opts="--hosts --hostfile --install-key --login-identity --accept-new-host-keys --connect-timeout --ssh-config --known-hosts --help" ;;
    doctor) opts="--hosts --hostfile --nodefile --submit --scheduler --site --nproc-per-node --bindir --connect-timeout --accept-new-host-keys --ssh-config --known-hosts --help" ;;
    nodes) opts="--slurm --nodefile --with-index --compress --help" ;;
    status) opts="--json --sort --desc --watch --on --help" ;;
    logs) opts="--rank --node --attempt --link --stdout --stderr --follow -f --trial --stage --batch --on --help" ;;
    report) opts="--output -o --on --help" ;;
    cancel) opts="--checkpoint --trial --on --help" ;;
    list) opts="--all --json --here --on --help" ;;
    wait) opts="--timeout --on --help" ;;
    fetch) opts="--on --to --accept-new-host-keys --connect-timeout --ssh-config --known-hosts --help" ;;
    notify) opts="--record --link --help" ;;
    shell) opts="--node --wait --on --help" ;;
    dev-hold) opts="--record --idle --deadline --node-exec --parallel --until-done --continue-before --help" ;;
    dev-shell-serve) opts="--session --help" ;;
    pbs-agents) opts="--nodefile --nodes --node-env --task-dir --checkpoint-file --checkpoint-signal --spares --job-nodefile --via --help" ;;
    node-agents) opts="--nodefile --nodes --node-env --task-dir --checkpoint-file --checkpoint-signal --spares --job-nodefile --via --help" ;;
    *) opts="" ;;
    esac
    if [ "${cur#-}" != "$cur" ]; then
        mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -f -X '!*.y*ml' -- "$cur")
    fi
}
complete -o filenames -F _ddpjob ddpjob
