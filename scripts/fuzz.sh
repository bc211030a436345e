#!/usr/bin/env bash
# Fuzzes every fuzz target of the project (every `func FuzzX(f *testing.F)` under cmd and
# internal) in turn, each for the given time, and prints one line per target: its package, the
# executions, the inputs that found new coverage and whether it failed. A failing input is
# written by go test to the package's testdata/fuzz/FuzzX/, where the normal `go test ./...`
# replays it from then on: fix the parser and keep the file as a regression seed.
#
# Usage: scripts/fuzz.sh [DURATION] [PATTERN]
#   DURATION  go test's -fuzztime per target (default 10m; e.g. 30s, 2m, 100000x)
#   PATTERN   an extended regular expression: only the targets whose names match
# FUZZ_PARALLEL sets the fuzzing workers per target (default: one per CPU).
# No root is needed: the targets parse bytes and start nothing.
set -uo pipefail

DURATION="${1:-10m}"
PATTERN="${2:-.}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="/usr/local/go/bin:$PATH"
export GOTOOLCHAIN=local
PARALLEL=()
if [[ -n "${FUZZ_PARALLEL:-}" ]]; then
	PARALLEL=(-parallel "$FUZZ_PARALLEL")
fi

LOGS="$(mktemp -d)"
trap 'rm -rf "$LOGS"' EXIT
failed=0
summary=()
# "path/to/file_test.go:12:func FuzzX(f *testing.F) {" for every target, in package order.
while IFS=: read -r file _ decl; do
	target="${decl#func }"
	target="${target%%(*}"
	[[ "$target" =~ $PATTERN ]] || continue
	pkg="./$(dirname "$file")"
	log="$LOGS/$target.log"
	printf '[%s] %s %s for %s\n' "$(date '+%H:%M:%S')" "$pkg" "$target" "$DURATION"
	if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$DURATION" -timeout 0 "${PARALLEL[@]}" "$pkg" >"$log" 2>&1; then
		result=ok
	else
		result=FAILED
		failed=1
		tail -n 30 "$log"
	fi
	# go test's last progress line: "fuzz: elapsed: 10m0s, execs: 123 (2/sec), new interesting: 4 (total: 9)"
	last="$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -n 1)"
	execs="$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")"
	interesting="$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")"
	summary+=("$(printf '%-22s %-26s %12s %6s  %s' "$pkg" "$target" "${execs:-?}" "${interesting:-?}" "$result")")
done < <(grep -rEn --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' cmd internal | sort -t: -k1,1 -k2,2n)

printf '\n%-22s %-26s %12s %6s  %s\n' package target execs new result
printf '%s\n' "${summary[@]}"
exit "$failed"
