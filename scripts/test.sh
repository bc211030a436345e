#!/usr/bin/env bash
# Runs every check of the project, as root: formatting, vet, staticcheck, the unit tests, the
# tests that need root and network namespaces, and the end-to-end tests against real local
# clusters. It installs what it needs first (scripts/setup.sh is idempotent).
#
# Usage: scripts/test.sh [--quick]
#   --quick  the contributor's loop: setup of the default components only, formatting, vet,
#            staticcheck, the unit tests and the tests that need root (a few minutes); no
#            end-to-end tests and no cgroup v2 VM. CI runs the full command.
# Each phase's wall time is printed at the end.
set -euo pipefail

QUICK=0
case "${1:-}" in
"") ;;
--quick) QUICK=1 ;;
*)
	echo "usage: scripts/test.sh [--quick]" >&2
	exit 2
	;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="/usr/local/go/bin:$PATH"
export GOTOOLCHAIN=local
STATICCHECK_VERSION=v0.8.2

log() { printf '[%s] %s\n' "$(date '+%H:%M:%S')" "$*"; }

# gotest ARGS... runs go test, and when it fails repeats each failed test's last lines at the
# end (scripts/failed-tests.awk): CI keeps only the tail of a log tens of thousands of lines long.
gotest() {
	local out rc=0
	out=$(mktemp)
	go test "$@" 2>&1 | tee "$out" || rc=$?
	((rc == 0)) || awk -f scripts/failed-tests.awk "$out"
	rm -f "$out"
	return "$rc"
}

# phase NAME starts timing a phase (ending the previous one); the table prints on exit, so a
# failed run still says where its time went.
PHASES=() PHASE="" PHASE_START=0 RUN_START=$SECONDS
phase() {
	end_phase
	PHASE="$1" PHASE_START=$SECONDS
	log "$1"
}
end_phase() {
	[[ -z "$PHASE" ]] || PHASES+=("$(printf '%6ds  %s' $((SECONDS - PHASE_START)) "$PHASE")")
	PHASE=""
}
report_phases() {
	local rc=$?
	end_phase
	printf '\nphase times:\n'
	printf '%s\n' "${PHASES[@]}"
	printf '%6ds  total (exit %d)\n' $((SECONDS - RUN_START)) "$rc"
}
trap report_phases EXIT

[[ $(id -u) -eq 0 ]] || { echo "run as root: the tests build network namespaces and clusters" >&2; exit 1; }

if ((QUICK)); then
	phase "setup (installs packages and builds the default run's binaries only where missing)"
	bash scripts/setup.sh
else
	phase "setup (installs packages and builds binaries only where missing; every datapath and release)"
	SETUP_ALL=1 bash scripts/setup.sh
fi

phase "gofmt"
unformatted=$(gofmt -l cmd internal test dashboards)
if [[ -n "$unformatted" ]]; then
	echo "not gofmt-formatted:" >&2
	echo "$unformatted" >&2
	exit 1
fi

phase "go vet"
go vet ./...
go vet -tags e2e ./test/...

phase "staticcheck $STATICCHECK_VERSION"
GOBIN="$(go env GOPATH)/bin"
if ! "$GOBIN/staticcheck" -version 2>/dev/null | grep -q "(${STATICCHECK_VERSION#v})"; then
	GOFLAGS='' go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
"$GOBIN/staticcheck" ./...
"$GOBIN/staticcheck" -tags e2e ./test/...

# The packages with tests that need root (they check os.Geteuid) run one at a time (-p 1),
# after the others: they snapshot the whole host and would see each other's namespaces,
# cgroups and processes if they overlapped. The others build and run two at a time: a clean
# checkout compiles every package of the project again, which -p 1 would also serialise.
phase "unit and root tests"
mapfile -t root_dirs < <(grep -rlE --include='*_test.go' 'os\.Geteuid\(\)' cmd internal test |
	xargs -n1 dirname | sort -u | grep -vx 'test/e2e' | sed 's|^|./|')
mapfile -t root_pkgs < <(go list "${root_dirs[@]}")
mapfile -t other_pkgs < <(go list ./... | grep -vxF -f <(printf '%s\n' "${root_pkgs[@]}"))
gotest -p 2 -count=1 "${other_pkgs[@]}"
gotest -p 1 -count=1 "${root_pkgs[@]}"
if ((QUICK)); then
	exit 0
fi

phase "end-to-end tests on real local clusters"
gotest -p 1 -count=1 -timeout 70m -tags e2e -v ./test/e2e/

# The cgroup v2 host proof: this machine is hybrid, so a VM with cgroup_no_v1=all runs the local
# cluster's lifecycle and a short run (software emulation: 8 to 10 minutes). It runs alone:
# beside the end-to-end tests, even at nice 19, its guest starved (30 % of a CPU) until its
# controller-manager's TLS handshake with its API server timed out.
phase "cgroup v2 host: the local cluster inside a QEMU VM (scripts/vm-cgroupv2.sh)"
CNB_VM_TIMEOUT=2700 bash scripts/vm-cgroupv2.sh
