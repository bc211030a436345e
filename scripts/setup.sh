#!/usr/bin/env bash
# Prepares a Debian 12 host (run as root) for cnibench: installs the Debian
# packages the local cluster uses, builds cnibench and the pause binary, and
# builds the third-party binaries the default run needs (Kubernetes,
# containerd, CoreDNS, CNI plugins from the Go module proxy, STREAM from
# crates.io with cargo) into the cache.
# Datapaths' binaries (flannel, Cilium) and other Kubernetes releases are
# built on first use by `cnibench cluster create`, or now with
# `bin/cnibench setup --all`.
#
# Idempotent: a second run skips apt when nothing is missing, and
# `cnibench setup` rebuilds nothing whose cache stamp is current.
#
# Environment:
#   CNIBENCH_CACHE  cache root (default /var/cache/cnibench)
#   SETUP_ALL=1     build every component now (what the tests need)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CNIBENCH_CACHE:-/var/cache/cnibench}"
PACKAGES=(
	etcd-server runc crun iperf3 sockperf mmdebstrap nftables iptables
	conntrack ethtool iproute2 util-linux procps socat ca-certificates
	clang llvm clang-19 llvm-19 ipset make libelf-dev zlib1g-dev libpcap-dev bpftool
	conmon skopeo libseccomp-dev pkg-config
	postgresql chromium python3-prometheus-client python3-pip
	linux-perf gcc-aarch64-linux-gnu libc6-dev-arm64-cross
)
# Packages of Debian's non-free component (netperf, the tool of two reference
# studies): fetched through a sources list of cnibench's own under the cache,
# never added to the host's sources, and installed from the fetched file.
NONFREE_PACKAGES=(netperf)
NONFREE_DIR="$CACHE/apt-non-free"
# apt lists older than this are refreshed before installing anything.
APT_MAX_AGE_SECONDS=86400

log() {
	printf '[%s] %s\n' "$(date '+%Y-%m-%d %H:%M:%S')" "$*"
}

die() {
	log "ERROR: $*" >&2
	exit 1
}

# ensure_go puts Go on PATH (the machine image installs it under
# /usr/local/go, which a root login shell's PATH may lack) and checks that it
# is at least the version go.mod asks for: with GOTOOLCHAIN=local an older Go
# would fail later with a less direct message.
ensure_go() {
	if ! command -v go >/dev/null 2>&1; then
		[[ -x /usr/local/go/bin/go ]] || die "go not found in PATH or /usr/local/go/bin; install Go $(go_wanted) or newer from go.dev/dl"
		export PATH="/usr/local/go/bin:$PATH"
	fi
	local have want
	have=$(go env GOVERSION | sed 's/^go//')
	want=$(go_wanted)
	if ! version_at_least "$have" "$want"; then
		die "Go $have is too old: building cnibench needs Go $want or newer (go.mod)"
	fi
}

# go_wanted prints the Go version go.mod requires.
go_wanted() {
	awk '$1 == "go" {print $2; exit}' "$ROOT/go.mod"
}

# version_at_least A B succeeds when dotted version A >= B.
version_at_least() {
	[[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]
}

# missing_packages prints the packages from PACKAGES that are not installed.
missing_packages() {
	local p
	for p in "${PACKAGES[@]}" "${NONFREE_PACKAGES[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
			printf '%s\n' "$p"
		fi
	done
}

# no_candidate succeeds when apt's lists know no installable version of one
# of the given packages, which a fresh `apt-get update` may fix.
no_candidate() {
	local p cand
	for p in "$@"; do
		cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
		if [[ -z "$cand" || "$cand" == "(none)" ]]; then
			return 0
		fi
	done
	return 1
}

# main_only prints those of its arguments that are not NONFREE_PACKAGES (the
# host's sources never offer those), or "iperf3" when none is left.
main_only() {
	local p out=()
	for p in "$@"; do
		[[ " ${NONFREE_PACKAGES[*]} " == *" $p "* ]] || out+=("$p")
	done
	printf '%s\n' "${out[@]:-iperf3}"
}

# apt_lists_stale succeeds when apt has no package lists or they are older
# than APT_MAX_AGE_SECONDS.
apt_lists_stale() {
	local newest
	newest=$(find /var/lib/apt/lists -maxdepth 1 -type f -name '*_Packages*' -printf '%T@\n' 2>/dev/null |
		sort -n | tail -n1 | cut -d. -f1)
	[[ -z "$newest" ]] && return 0
	(($(date +%s) - newest > APT_MAX_AGE_SECONDS))
}

POLICY_RC=/usr/sbin/policy-rc.d
POLICY_RC_OURS=0
remove_policy_rc() {
	if ((POLICY_RC_OURS)); then
		rm -f "$POLICY_RC"
		POLICY_RC_OURS=0
	fi
}

install_packages() {
	local missing main
	mapfile -t missing < <(missing_packages)
	if ((${#missing[@]} == 0)); then
		log "step 1/3: Debian packages already installed"
		return
	fi
	log "step 1/3: installing Debian packages: ${missing[*]}"
	if apt_lists_stale; then
		log "  apt package lists missing or older than a day: apt-get update"
		apt-get update
	elif mapfile -t main < <(main_only "${missing[@]}") && no_candidate "${main[@]}"; then
		log "  apt package lists lack some of them: apt-get update"
		apt-get update
	fi
	# etcd-server's maintainer scripts would start a host-wide etcd on
	# 127.0.0.1:2379; the cluster runs its own etcd, so block service starts
	# during the install (101 = "action forbidden") unless the admin already
	# has a policy in place.
	if [[ ! -e "$POLICY_RC" ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$POLICY_RC"
		chmod 0755 "$POLICY_RC"
		POLICY_RC_OURS=1
		trap remove_policy_rc EXIT
		trap 'remove_policy_rc; exit 130' INT TERM
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${PACKAGES[@]}"
	install_nonfree
	remove_policy_rc
	trap - EXIT INT TERM
	stop_host_etcd
	stop_host_netserver
}

# nonfree_apt runs apt-get with the non-free sources list alone, its lists
# under NONFREE_DIR: the host's sources and lists stay as they are.
nonfree_apt() {
	apt-get -q -o Dir::Etc::sourcelist="$NONFREE_DIR/sources.list" -o Dir::Etc::sourceparts=- \
		-o Dir::State::Lists="$NONFREE_DIR/lists" -o APT::Get::List-Cleanup=0 "$@"
}

# install_nonfree fetches NONFREE_PACKAGES from bookworm's non-free component
# and installs them (their dependencies come from the host's own sources).
install_nonfree() {
	local codename
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
	mkdir -p "$NONFREE_DIR/lists/partial" "$NONFREE_DIR/debs"
	printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s non-free\n' \
		"$codename" >"$NONFREE_DIR/sources.list"
	log "  fetching ${NONFREE_PACKAGES[*]} from Debian's non-free component"
	nonfree_apt update
	rm -f "$NONFREE_DIR"/debs/*.deb
	# As root: apt's _apt user may not write the cache directory.
	(cd "$NONFREE_DIR/debs" && nonfree_apt -o APT::Sandbox::User=root download "${NONFREE_PACKAGES[@]}")
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$NONFREE_DIR"/debs/*.deb
}

# stop_host_netserver keeps netperf's packaged netserver (an init script that
# listens on port 12865 at boot) from running on the host: benchmarks start
# their own servers.
stop_host_netserver() {
	[[ -x /etc/init.d/netperf ]] || return 0
	if command -v update-rc.d >/dev/null 2>&1; then
		update-rc.d netperf disable >/dev/null 2>&1 || true
	fi
	/etc/init.d/netperf stop >/dev/null 2>&1 || true
}

# stop_host_etcd stops an etcd the package started anyway (for instance when
# a policy-rc.d of the admin allowed it), so it cannot collide with the
# cluster's etcd ports.
stop_host_etcd() {
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
		log "  stopping and disabling the host etcd service started by the package"
		systemctl stop etcd || true
		systemctl disable etcd >/dev/null 2>&1 || true
	elif [[ -x /etc/init.d/etcd ]] && /etc/init.d/etcd status >/dev/null 2>&1; then
		log "  stopping the host etcd service started by the package"
		/etc/init.d/etcd stop || true
	fi
	# Only the packaged daemon, which the init script starts as a bare
	# /usr/bin/etcd configured through /etc/default/etcd; a cluster's own
	# etcd always has arguments and is never matched.
	local pid
	for pid in $(pgrep -x etcd 2>/dev/null || true); do
		if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q '^/usr/bin/etcd *$'; then
			log "  stopping host etcd (pid $pid)"
			kill "$pid" 2>/dev/null || true
		fi
	done
}

build_project() {
	log "step 2/3: building cnibench and cnb-pause (go $(go env GOVERSION))"
	mkdir -p "$ROOT/bin" "$CACHE/bin"
	cd "$ROOT"
	export GOTOOLCHAIN=local
	# VCS stamping fails outside a git checkout with a commit (a tarball,
	# a fresh `git init`); the binary works the same without it.
	if ! git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
		export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false"
	fi
	# Static: the same binary runs on the host and, as the in-cluster agent, in the tools image.
	local version
	version=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo dev)
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" -o bin/cnibench ./cmd/cnibench
	# kubectl runs kubectl-cnibench on PATH as `kubectl cnibench`.
	ln -sfn cnibench bin/kubectl-cnibench
	# Build to a temp name and rename, so a concurrent cluster never sees a
	# half-written pause binary.
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$CACHE/bin/.cnb-pause.tmp" ./cmd/cnb-pause
	mv -f "$CACHE/bin/.cnb-pause.tmp" "$CACHE/bin/cnb-pause"
}

build_binaries() {
	local args=()
	if [[ "${SETUP_ALL:-0}" == 1 ]]; then
		args=(--all)
		log "step 3/3: building every third-party binary into $CACHE (skips what is current)"
	else
		log "step 3/3: building the third-party binaries the default run needs into $CACHE (skips what is current)"
	fi
	CNIBENCH_CACHE="$CACHE" "$ROOT/bin/cnibench" setup "${args[@]}"
}

main() {
	local start
	[[ $(id -u) -eq 0 ]] || die "run as root (apt-get, /var/cache and network namespaces need it)"
	start=$(date +%s)
	log "cnibench setup: repo $ROOT, cache $CACHE"
	ensure_go
	install_packages
	build_project
	build_binaries
	log "setup done in $(($(date +%s) - start)) s"
}

# Sourcing the script (for testing its functions) must not run it.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	main "$@"
fi
