#!/bin/bash
# bash_completion: the installed share/bash-completion/completions/clgrad, sourced in
# bash, completes commands, options and spelled-out values as `clgrad --help` and
# `clgrad CMD --help` give them, and paths where a command takes files. The completion
# function is called as bash calls it, with COMP_WORDS and COMP_CWORD set.
# usage: bash_completion.sh BUILD_DIR CLGRAD
set -u
export LC_ALL=C   # sort byte-wise, as the expected lists are written (a UTF-8 locale puts "--help" among the words)
build=$1 clgrad=$2
work=$build/completion-test
rm -rf "$work"
cmake --install "$build" --prefix "$work/stage" >/dev/null || exit 1
file=$work/stage/share/bash-completion/completions/clgrad
[ -f "$file" ] || { echo "FAIL no $file"; exit 1; }
# shellcheck source=/dev/null
source "$file"
complete -p clgrad | grep -q -- '-F _clgrad' || { echo "FAIL the file registers no completion for clgrad"; exit 1; }
mkdir -p "$work/cwd" && cd "$work/cwd" && touch mlp.json model.ckpt || exit 1
fails=0
# want "WANT" WORD...: completing the last WORD gives exactly WANT (sorted, space-separated)
want() {
    local expect=$1
    shift
    COMP_WORDS=("$clgrad" "$@")
    COMP_CWORD=$#
    _clgrad
    local got
    got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
    if [ "$got" = "$expect" ]; then
        echo "ok   clgrad $* -> $got"
    else
        echo "FAIL clgrad $*: want \"$expect\", got \"$got\""
        fails=$((fails + 1))
    fi
}
cmds=$("$clgrad" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p' | sort | tr '\n' ' ')
want "--help --version ${cmds% }" ""
want "train" tr
want "conformance" con
want "--precision" train --pre
want "float32 mixed mixed-bf16" train --precision ""
want "f32 f64" conformance --dtype ""
want "fashion-mnist" train --data f
want "fashion-mnist mlp.json model.ckpt" train --data ""
want "" train --epochs ""
want "mlp.json" train ml
want "--batch --confusion-png --data --device --eval-steps --help --streams --workers" eval --
want "--length" sample --len
want "model.ckpt" info mo
echo "$fails failed"
[ "$fails" -eq 0 ]
