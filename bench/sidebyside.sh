#!/usr/bin/env bash
# sidebyside.sh measures the side-by-side comparison and renders
# BENCHMARKS.md's table from the measurements, not by hand. It runs bench
# once per workload (one process each, so that one system's blow-up
# cannot take the others' figures with it), saves each JSON report in
# the output directory, and renders them with cmd/sidebyside into
# table.md there and on stdout. Run it from bench/:
#
#   ./sidebyside.sh -suite quick                      # into results/quick-hogs0
#   ./sidebyside.sh -suite quick -hogs 2 -against results/quick-hogs0
#   ./sidebyside.sh -suite all -- -maxheap 6          # BENCHMARKS.md's run
#
# Flags:
#   -suite S     bench's suite: short, quick or all (default quick)
#   -hogs N      goroutines that never yield, beside the runs (default 0)
#   -reps N      repetitions per cell (default bench's, 6)
#   -out DIR     where the JSON and table.md go (default results/S-hogsN);
#                it must hold no .json yet
#   -against DIR an earlier output directory (the quiet set) to compare
#                with: crisp/peer ratios there against here
# Arguments after -- go to every bench run.
set -euo pipefail

suite=quick hogs=0 reps= out= against=
while [ $# -gt 0 ]; do
	case $1 in
	-suite) suite=$2; shift 2 ;;
	-hogs) hogs=$2; shift 2 ;;
	-reps) reps=$2; shift 2 ;;
	-out) out=$2; shift 2 ;;
	-against) against=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "sidebyside.sh: unknown argument $1 (see the comment at the top)" >&2; exit 2 ;;
	esac
done
out=${out:-results/$suite-hogs$hogs}
if compgen -G "$out/*.json" >/dev/null; then
	echo "sidebyside.sh: $out already holds .json reports; remove them or pick another -out" >&2
	exit 2
fi
mkdir -p "$out"

export GOWORK=off
# Build once: go run would link the binary again for every workload.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/bench" .
go build -o "$bin/sidebyside" ./cmd/sidebyside

args=(-suite "$suite" -hogs "$hogs" -json)
[ -n "$reps" ] && args+=(-reps "$reps")
i=0
for w in $("$bin/bench" -suite "$suite" -list); do
	i=$((i + 1))
	sys=()
	# goakt's fib at the full size outgrows any machine's memory (see
	# BENCHMARKS.md, Failures): leave it out there, as the table does.
	if [ "$suite" = all ] && [ "$w" = fib ]; then
		sys=(-system crisp,crisp+dl,crisp-tell,chan,protoactor,hollywood,phony)
	fi
	file=$(printf '%s/%02d-%s.json' "$out" "$i" "$w")
	"$bin/bench" "${args[@]}" -workload "$w" ${sys[@]+"${sys[@]}"} "$@" >"$file.tmp"
	mv "$file.tmp" "$file"
done

{
	echo "Commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- .. || echo ' (with local changes)'); JSON in $out."
	echo
	"$bin/sidebyside" ${against:+"$against"} "$out"
} | tee "$out/table.md"
