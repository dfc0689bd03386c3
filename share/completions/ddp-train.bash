# bash completion for ddp-train: its commands and each command's options come from its own
# --help texts, so they never drift.
_ddp_train() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        mapfile -t COMPREPLY < <(compgen -W "$("${COMP_WORDS[0]}" --help 2>/dev/null | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p') --help --version" -- "$cur")
        return
    fi
    case $prev in
    --data | --checkpoint-dir) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
    --backend) mapfile -t COMPREPLY < <(compgen -W "tcp nccl" -- "$cur"); return ;;
    --model) mapfile -t COMPREPLY < <(compgen -W "mlp resnet" -- "$cur"); return ;;
    --schedule) mapfile -t COMPREPLY < <(compgen -W "cosine step constant" -- "$cur"); return ;;
    --cpu-conv) mapfile -t COMPREPLY < <(compgen -W "onednn onednn-nchw im2col" -- "$cur"); return ;;
    --buffers) mapfile -t COMPREPLY < <(compgen -W "pg host" -- "$cur"); return ;;
    esac
    if [ "${cur#-}" != "$cur" ]; then
        mapfile -t COMPREPLY < <(compgen -W "$("${COMP_WORDS[0]}" "${COMP_WORDS[1]}" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)" -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}
complete -o filenames -F _ddp_train ddp-train
