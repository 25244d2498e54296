#!/bin/sh
# man_pages: clgrad.1 and clgrad-CMD.1 exist for every command `clgrad --help` lists,
# installed gzip'd under share/man/man1, and groff renders each without a warning
# (-ww: all of them); each command's page holds every option its --help names.
# usage: man_pages.sh BUILD_DIR CLGRAD
set -eu
build=$1 clgrad=$2
work=$build/man-test
rm -rf "$work"
cmake --install "$build" --prefix "$work/stage" >/dev/null
man1=$work/stage/share/man/man1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
cmds=$("$clgrad" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
[ -n "$cmds" ] || { echo "FAIL clgrad --help lists no commands"; exit 1; }
n=0
for page in clgrad $(for c in $cmds; do echo "clgrad-$c"; done); do
    n=$((n + 1))
    f=$man1/$page.1.gz
    [ -f "$f" ] || { fail "$page: no $f"; continue; }
    gzip -dc "$f" >"$work/$page.1"
    # the title and NAME are the page's own, the version CMake's
    grep -q "^\.TH $(echo "$page" | tr a-z A-Z) \"1\" .*\"$page $("$clgrad" --version | sed -n 's/^clgrad \([^ ]*\).*/\1/p')\"" \
        "$work/$page.1" || fail "$page: title line: $(grep '^\.TH' "$work/$page.1")"
    groff -man -Tutf8 -ww -z "$work/$page.1" 2>"$work/$page.warn" || fail "$page: groff failed"
    [ -s "$work/$page.warn" ] && fail "$page: groff warns: $(cat "$work/$page.warn")"
    # as text, lines long enough that nothing wraps: -P-cbou drops bold and underlining
    groff -man -Tutf8 -P-cbou -rLL=2000n "$work/$page.1" >"$work/$page.txt" 2>/dev/null
    grep -q "^NAME$" "$work/$page.txt" && grep -q "^ *$page - " "$work/$page.txt" ||
        fail "$page: renders no NAME section naming $page"
    if [ "$page" != clgrad ]; then
        for opt in $("$clgrad" "${page#clgrad-}" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
            grep -q -- "$opt\>" "$work/$page.txt" || fail "$page: $opt of --help missing"
        done
    fi
done
echo "$n man pages, $fails failures"
[ "$fails" -eq 0 ]
