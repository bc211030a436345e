#!/bin/sh
# The cgroup v2 test, run as root inside the VM that scripts/vm-cgroupv2.sh boots with
# cgroup_no_v1=all: the local cluster's whole lifecycle on a pure cgroup v2 host, for each
# datapath of CNB_VM_DATAPATHS (from the VM's config; default flannel-vxlan, a datapath with a
# daemon of its own and a VXLAN device, beyond the bridge every run starts with). For each it
# creates a single-node cluster and checks that the cluster's daemons and pods live in its
# cgroup2 tree; then one short run interleaves all of them on the same-node path
# (under emulation a sample costs about 13 s; the pods' counters, which are what cgroup v2
# changes, are read around every workload alike), which times each one's Service programming
# and a new pod's first connection, and, where the datapath enforces NetworkPolicy, the allow
# policy's enforcement; last it deletes the clusters and checks that nothing of them is left:
# cgroups, namespaces, links, mounts, processes, nft tables, routes. Any failure exits non-zero.
# One node, not two: every node is the same kubelet, containerd and cgroup tree, and importing
# the images into each node is the guest's costliest step ("starting nodes": 212 of a 382 s
# create with two); two-node clusters (cross-node paths, the underlay) are proven on the host by
# every end-to-end test.
# (The oldest selectable release, v1.34.2, is created beside the default one on the host by
# TestClusterLifecycle, not here: on a machine whose guest created a cluster in 720 s, the
# second create and delete made the VM test 40 minutes and the CI run longer than it may be.)
# Guest code runs several times slower than native (software emulation): --wait is generous.
set -eu

step() { echo "[cnb-vm $(date +%T)] $*"; }
fail() {
	echo "[cnb-vm] FAIL: $*"
	exit 1
}
elapsed() { echo $(($(date +%s) - $1)); }

[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || fail "/sys/fs/cgroup is not cgroup2: not a pure cgroup v2 host"
grep -q ' - cgroup ' /proc/self/mountinfo && fail "a cgroup v1 hierarchy is mounted"
step "kernel $(uname -r), cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

DATAPATHS=${CNB_VM_DATAPATHS:-flannel-vxlan}
SUITE=/tmp/vm-suite.yaml
echo "targets:" >"$SUITE"
i=0
for dp in $DATAPATHS; do
	i=$((i + 1))
	name=vm$i
	t=$(date +%s)
	step "cluster create $name ($dp)"
	cnibench cluster create --name "$name" --nodes 1 --datapath "$dp" --wait 45m
	step "created in $(elapsed "$t") s"
	# The cluster's tree holds its daemons and the kubelets' pods, in the one hierarchy, with
	# the controllers the kubelet needs (the VM's root enables only cpu, io, memory and pids:
	# cpuset is the cluster's doing).
	[ -d "/sys/fs/cgroup/cnb-$name/node1/kubepods" ] || fail "no kubepods cgroup below /sys/fs/cgroup/cnb-$name/node1"
	for c in cpu cpuset memory pids; do
		grep -qw "$c" "/sys/fs/cgroup/cnb-$name/node1/cgroup.controllers" || fail "controller $c not enabled for $name's node1"
	done
	grep -q . "/sys/fs/cgroup/cnb-$name/ctl/cgroup.procs" || fail "no control-plane process in /cnb-$name/ctl"
	grep -q '"cgroups": *"cgroup v2 (unified)"' "/var/lib/cnibench/clusters/$name/cluster.json" ||
		fail "the cluster's state does not record a unified cgroup host: $(cat "/var/lib/cnibench/clusters/$name/cluster.json")"
	policy=""
	case "$dp" in calico-* | canal | cilium-*) policy=", networkPolicy: {allow: true}" ;; esac
	echo "  - {name: $dp, local: {cluster: $name, datapath: $dp, nodes: 1}$policy}" >>"$SUITE"
done
cat >>"$SUITE" <<'SUITE'
paths: [same-node]
workloads:
  - {kind: tcp-stream, streams: 1}
repetitions: 2
duration: 2s
warmup: off
SUITE
t=$(date +%s)
step "run"
# The status lines, the run's end among them, go to stderr; the summary to stdout.
cnibench run --keep -f "$SUITE" --store /tmp/vm-results.db 2>&1 | tee /tmp/vm-run.txt
step "run done in $(elapsed "$t") s"
grep -q "complete: " /tmp/vm-run.txt || fail "the run did not complete"
for dp in $DATAPATHS; do
	grep -q "target $dp: a new Service carried traffic" /tmp/vm-run.txt || fail "no Service programming figure for $dp"
	case "$dp" in calico-* | canal | cilium-*)
		grep -q "target $dp: NetworkPolicy enforced" /tmp/vm-run.txt || fail "no NetworkPolicy enforcement figure for $dp" ;;
	esac
done
n=$(cnibench results list --store /tmp/vm-results.db | grep -c . || true)
[ "$n" -ge 2 ] || fail "no run stored"

i=0
for dp in $DATAPATHS; do
	i=$((i + 1))
	t=$(date +%s)
	step "cluster delete vm$i"
	cnibench cluster delete --name "vm$i"
	step "deleted in $(elapsed "$t") s"
done

# check_clean fails when anything of a cluster is left on the VM: its cgroup tree, namespaces,
# links, mounts (the VM's own mounts of the cache and binaries are not the cluster's), nft
# tables, processes, routes.
check_clean() {
	left=""
	for d in /sys/fs/cgroup/cnb-*; do
		if [ -e "$d" ]; then left="$left cgroup:$d"; fi
	done
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		case "$ns" in cnb-*) left="$left netns:$ns" ;; esac
	done
	for l in $(ip -o link show | awk -F': ' '{print $2}'); do
		case "$l" in cnb*) left="$left link:$l" ;; esac
	done
	m=$(awk '$5 ~ /^\/var\/lib\/cnibench|^\/run\/netns\/cnb-|^\/run\/cnibench/ {print $5}' /proc/self/mountinfo | tr '\n' ' ')
	if [ -n "$m" ]; then left="$left mounts:$m"; fi
	if nft list tables 2>/dev/null | grep -qi cnb; then left="$left nft:$(nft list tables | tr '\n' ' ')"; fi
	if ip route show table all | grep -q '10\.2[0-5][0-9]\.'; then left="$left routes:$(ip route show table all | grep -c '10\.2[0-5][0-9]\.')"; fi
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null || true)
		case "$exe" in /var/cache/cnibench/* | */etcd | */runc | */crun) left="$left proc:${p#/proc/}:$exe" ;; esac
	done
	[ -z "$left" ] || fail "left behind after delete:$left"
}
check_clean

step "PASS: create, run and delete on a pure cgroup v2 host (Kubernetes v1.37.2; $DATAPATHS), nothing left"
