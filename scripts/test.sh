#!/usr/bin/env bash
# Runs every check of the project, as root: formatting, vet, staticcheck, the unit tests, the
# tests that need root and network namespaces, and the end-to-end tests against real local
# clusters. It installs what it needs first (scripts/setup.sh is idempotent).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="/usr/local/go/bin:$PATH"
export GOTOOLCHAIN=local
STATICCHECK_VERSION=v0.8.2

log() { printf '[%s] %s\n' "$(date '+%H:%M:%S')" "$*"; }

[[ $(id -u) -eq 0 ]] || { echo "run as root: the tests build network namespaces and clusters" >&2; exit 1; }

log "setup (installs packages and builds binaries only where missing; every datapath and release)"
SETUP_ALL=1 bash scripts/setup.sh

log "gofmt"
unformatted=$(gofmt -l cmd internal test)
if [[ -n "$unformatted" ]]; then
	echo "not gofmt-formatted:" >&2
	echo "$unformatted" >&2
	exit 1
fi

log "go vet"
go vet ./...
go vet -tags e2e ./test/...

log "staticcheck $STATICCHECK_VERSION"
GOBIN="$(go env GOPATH)/bin"
if ! "$GOBIN/staticcheck" -version 2>/dev/null | grep -q "(${STATICCHECK_VERSION#v})"; then
	GOFLAGS='' go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
"$GOBIN/staticcheck" ./...
"$GOBIN/staticcheck" -tags e2e ./test/...

# Packages run one at a time (-p 1): the root tests snapshot the whole host and would see
# each other's namespaces and cgroups if they overlapped.
log "unit and root tests"
go test -p 1 -count=1 ./...

log "end-to-end tests on real local clusters"
go test -p 1 -count=1 -timeout 70m -tags e2e -v ./test/e2e/

# The cgroup v2 host proof: this machine is hybrid, so a VM with cgroup_no_v1=all runs the local
# cluster's lifecycle and a short run (software emulation: about 15 minutes).
log "cgroup v2 host: the local cluster inside a QEMU VM (scripts/vm-cgroupv2.sh)"
CNB_VM_TIMEOUT=2700 bash scripts/vm-cgroupv2.sh
