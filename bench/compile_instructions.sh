#!/bin/sh
# bench/compile_instructions.sh — how the work of braid_compile and of the
# plan-file load grows with the graph, counted in instructions
# (valgrind's callgrind, collecting only inside braid_compile and
# br_planfile_load) rather than timed: the count does not move with other
# processes on the machine or with its caches, so it shows the growth of
# the algorithms alone. bench/compile_scaling times the same graphs; the
# two together separate what braid does from what the memory system costs
# (bench/RESULTS.md, issue 17).
#
# usage: bench/compile_instructions.sh [BUILD_DIR] [--shapes wide,chain,...]
#                                      [--sizes 15000,150000,...]
# BUILD_DIR defaults to build (make build). Needs valgrind (apt-get install
# valgrind). Prints one line per (shape, size) with the instruction counts
# and, from the second size on, their ratio to the previous size's. At 1.5M
# nodes one shape takes several minutes under valgrind.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
shapes=wide,chain,outputs,random
sizes=15000,150000
while [ $# -gt 0 ]; do
    case "$1" in
        --shapes) shapes=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --*) echo "usage: $0 [BUILD_DIR] [--shapes LIST] [--sizes LIST]" >&2
             exit 2 ;;
        *) build=$1; shift ;;
    esac
done
bin="$build/bench/compile_scaling"
[ -x "$bin" ] || { echo "$0: $bin is missing (make build)" >&2; exit 1; }
command -v valgrind >/dev/null || {
    echo "$0: valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Instructions inside function $1 in the run of $2 $3 (compile_scaling
# forks a child per point: the largest output file is the child's).
count() {
    rm -f "$tmp"/cg.*
    valgrind --tool=callgrind --collect-atstart=no --toggle-collect="$1" \
        --callgrind-out-file="$tmp/cg.%p" \
        "$bin" --shapes "$2" --sizes "$3" --reps 1 --timeout 3600 \
        >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
    f=$(ls -S "$tmp"/cg.* | head -n 1)
    sed -n 's/^totals: *//p;s/^summary: *//p' "$f" | head -n 1
}

echo "shape    nodes      compile_instr  ratio   load_instr     ratio"
for shape in $(echo "$shapes" | tr ',' ' '); do
    prev_c='' prev_l=''
    for n in $(echo "$sizes" | tr ',' ' '); do
        c=$(count braid_compile "$shape" "$n")
        l=$(count br_planfile_load "$shape" "$n")
        rc=$( [ -n "$prev_c" ] && awk "BEGIN{printf \"%.2fx\", $c/$prev_c}" || echo '-')
        rl=$( [ -n "$prev_l" ] && awk "BEGIN{printf \"%.2fx\", $l/$prev_l}" || echo '-')
        printf '%-8s %-10s %-14s %-7s %-14s %s\n' "$shape" "$n" "$c" "$rc" "$l" "$rl"
        echo "RESULT compile_instructions_$shape nodes=$n compile_instr=$c load_instr=$l"
        prev_c=$c prev_l=$l
    done
done
