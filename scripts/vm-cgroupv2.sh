#!/usr/bin/env bash
# Boots a small QEMU VM whose only cgroup hierarchy is cgroup v2
# (cgroup_no_v1=all) and runs a test script inside it; the exit code says
# whether it passed. The point is proof that cnibench (kubelet, containerd,
# runc/crun, the CNIs) works on a pure cgroup v2 host, which this machine is
# not. The VM has no network device, so nothing the tests do leaves it.
#
# QEMU runs in software emulation (TCG) by default: guest code runs several times slower than
# native, yet it is the faster choice here. The nested /dev/kvm of this kind of machine boots no
# stock Debian kernel: with -cpu host the kernel stops at once on `lock cmpxchg16b` ("KVM
# internal error ... emulation failure"); with host,-cx16 (and with -xsave too) it stops on
# `xrstor` after 150 s of guest time; with qemu64,-cx16 it printed nothing in 400 s while QEMU
# used 23 % of a CPU. The smoke test passes under TCG in 110 s. CNB_VM_ACCEL=kvm is for hosts
# whose KVM runs the kernel (the CPU model is then host,-cx16 unless CNB_VM_CPU names one).
#
# Usage: scripts/vm-cgroupv2.sh [GUEST_SCRIPT | smoke | prepare]
#   prepare       install the host packages and build the VM assets, boot nothing (to warm
#                 a machine's cache; the assets take about a minute)
#   GUEST_SCRIPT  host path of a shell script run in the guest as
#                 /cnb-vm/guest.sh (default: test/vm/cluster.sh, the local
#                 cluster's lifecycle and a short run; it needs bin/cnibench
#                 and the cache that scripts/setup.sh fills)
#   smoke         a built-in check of cgroup v2, netns, veth, bridge, vxlan, nft
# Environment:
#   CNIBENCH_CACHE  cache root (default /var/cache/cnibench); VM assets are
#                   cached in its vm/<key>/, and it is visible read-only in
#                   the guest at /var/cache/cnibench with a tmpfs overlay
#   CNB_VM_BIN      host dir shown at /opt/cnibench/bin (default $ROOT/bin)
#   CNB_VM_TIMEOUT  wall-clock limit for the VM in seconds (default 3600)
#   CNB_VM_MEM      guest memory in MiB (default 4096)
#   CNB_VM_SMP      guest CPUs (default 2)
#   CNB_VM_ACCEL    tcg, kvm or auto (default tcg: see above; auto is kvm when /dev/kvm opens)
#   CNB_VM_CPU      CPU model (default host,-cx16 under KVM, qemu64 under TCG: see run_vm)
#   CNB_VM_LOG      console log (default $CNIBENCH_CACHE/logs/vm-cgroupv2.log)
#   CNB_VM_APPEND   extra kernel arguments (e.g. ignore_loglevel for boot messages)
#   CNB_VM_DATAPATHS  the datapaths test/vm/cluster.sh creates a cluster of, one each
#                   (default flannel-vxlan; e.g. "bridge flannel-vxlan cilium-vxlan calico-vxlan",
#                   with CNB_VM_MEM=8192 and CNB_VM_TIMEOUT=5400)
# Exit: 0 pass, 1 guest test failed, 124 timeout, 2 anything else.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CNIBENCH_CACHE:-/var/cache/cnibench}"
BIN_DIR="${CNB_VM_BIN:-$ROOT/bin}"
TIMEOUT="${CNB_VM_TIMEOUT:-3600}"
MEM="${CNB_VM_MEM:-4096}"
SMP="${CNB_VM_SMP:-2}"
ACCEL="${CNB_VM_ACCEL:-tcg}"
CPU="${CNB_VM_CPU:-}"
LOG="${CNB_VM_LOG:-$CACHE/logs/vm-cgroupv2.log}"
# Bump when the way the assets are built changes (it is part of the key).
RECIPE_REV=2
HOST_PACKAGES=(qemu-system-x86 busybox-static xz-utils mmdebstrap)
# What a cluster node needs (mmdebstrap: the cluster checks it is on PATH; clang-19 and
# llvm-19: Cilium's agents compile their programs at run time; libpcap0.8 and libelf1:
# calico-node's shared libraries), plus mount for the guest init.
ROOTFS_PACKAGES=(
	iproute2 kmod procps util-linux mount nftables iptables etcd-server runc
	crun conntrack ethtool socat ca-certificates ipset mmdebstrap busybox clang-19 llvm-19
	libpcap0.8 libelf1
)
# Loaded by the initramfs (with their dependencies) to mount the 9p root.
INITRD_MODULES=(virtio virtio_ring virtio_pci 9pnet 9pnet_virtio 9p overlay)
NINEP_OPTS="ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose"

SHARE="" BUILD_TMP="" QEMU_PID="" TAIL_PID=""

log() { printf '[%s] %s\n' "$(date '+%Y-%m-%d %H:%M:%S')" "$*"; }
die() { log "ERROR: $*" >&2; exit 2; }

cleanup() {
	if [[ -n "$QEMU_PID" ]] && kill -0 "$QEMU_PID" 2>/dev/null; then
		kill -TERM "$QEMU_PID" 2>/dev/null || true
		wait "$QEMU_PID" 2>/dev/null || true
	fi
	if [[ -n "$TAIL_PID" ]]; then kill "$TAIL_PID" 2>/dev/null || true; fi
	[[ -z "$SHARE" ]] || rm -rf "$SHARE"
	[[ -z "$BUILD_TMP" ]] || rm -rf "$BUILD_TMP"
}

pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'; }
has_candidate() { [[ "$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')" =~ ^[0-9] ]]; }

ensure_host_packages() {
	local p missing=() update=0
	for p in "${HOST_PACKAGES[@]}"; do pkg_installed "$p" || missing+=("$p"); done
	((${#missing[@]} > 0)) || { log "step 1/4: host packages present"; return; }
	log "step 1/4: installing ${missing[*]}"
	for p in "${missing[@]}"; do has_candidate "$p" || update=1; done
	((update == 0)) || apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# pick_kernel sets KPKG/KPKG_VER to the newest stock linux-image-6.1.0-NN-amd64.
pick_kernel() {
	local p
	KPKG="" KPKG_VER=""
	for p in $(apt-cache pkgnames linux-image-6.1.0- | grep -E '^linux-image-6\.1\.0-[0-9]+-amd64$' | sort -rV); do
		KPKG="$p" KPKG_VER=$(apt-cache policy "$p" | awk '/Candidate:/ {print $2}')
		[[ "$KPKG_VER" =~ ^[0-9] ]] && return
	done
	die "apt knows no linux-image-6.1.0-NN-amd64 package (apt-get update?)"
}

# extract_vmlinux IMAGE OUT: a Debian vmlinuz is a bzImage whose payload is
# xz; decompress from each xz stream magic until the result is an ELF file.
# xz complains about the data after the stream, so its status is ignored.
extract_vmlinux() {
	local off
	while IFS=: read -r off _; do
		tail -c "+$((off + 1))" "$1" | xz -dc >"$2" 2>/dev/null || true
		[[ "$(head -c 4 "$2" | od -An -tx1 | tr -d ' \n')" == 7f454c46 ]] && return 0
	done < <(LC_ALL=C grep -obaP '\xfd7zXZ\x00' "$1")
	return 1
}

# module_closure MODDIR NAME...: prints the modules.dep paths needed to load
# NAMEs in load order; built-in modules print nothing. A modules.dep line
# lists all dependencies of a module, to be loaded last to first.
module_closure() {
	local moddir="$1" n line i deps
	declare -A seen=()
	for n in "${@:2}"; do
		if ! line=$(grep -E "/${n//_/[_-]}\.ko(\.[a-z]+)?:" "$moddir/modules.dep"); then
			grep -qE "/${n//_/[_-]}\.ko" "$moddir/modules.builtin" && continue
			die "kernel module $n not found"
		fi
		read -ra deps <<<"${line#*:}"
		deps=("${line%%:*}" "${deps[@]}")
		for ((i = ${#deps[@]} - 1; i >= 0; i--)); do
			[[ -n "${seen[${deps[i]}]:-}" ]] || printf '%s\n' "${deps[i]}"
			seen[${deps[i]}]=1
		done
	done
}

build_rootfs() {
	local dir="$1" suite incl
	# shellcheck source=/dev/null
	suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
	incl=$(IFS=,; echo "${ROOTFS_PACKAGES[*]}")
	# Maintainer scripts (etcd-server's) must not start services: mmdebstrap
	# blocks them itself; the hook makes sure, and the file stays in the guest.
	# shellcheck disable=SC2016 # $1 is the hook's argument
	mmdebstrap --variant=minbase --include="$incl" \
		--essential-hook='printf "#!/bin/sh\nexit 101\n" >"$1/usr/sbin/policy-rc.d"; chmod 755 "$1/usr/sbin/policy-rc.d"' \
		"$suite" "$dir" </dev/null
	printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
	chmod 755 "$dir/usr/sbin/policy-rc.d"
	# The guest seeds its tmpfs /var/lib from this: one file over 9p instead of
	# ~800 (cp -a of the tree took 12 s under TCG).
	mkdir -p "$dir/usr/lib/cnb-vm"
	tar -C "$dir/var/lib" -cf "$dir/usr/lib/cnb-vm/var-lib.tar" .
}

write_initramfs_init() {
	cat >"$1" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
fail() {
	echo "cnb-initramfs: FATAL: \$*"; echo "CNB-VM RESULT: FAIL (exit 126)"
	printf '\\176' | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null; sleep 2; poweroff -f
}
for m in \$(cat /modules.list); do insmod "/modules/\$m" || fail "insmod \$m"; done
mkdir -p /lower /rw /newroot
mount -t 9p -o $NINEP_OPTS rootfs /lower || fail "mount 9p rootfs"
mount -t tmpfs -o mode=0755 tmpfs /rw && mkdir /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	fail "mount overlay root"
mkdir -p /newroot/cnb-vm
mount -t 9p -o $NINEP_OPTS cnbvm /newroot/cnb-vm || fail "mount 9p cnbvm"
[ -x /newroot/cnb-vm/init ] || fail "no /cnb-vm/init"
umount /proc /sys /dev
exec switch_root /newroot /cnb-vm/init
EOF
	chmod 755 "$1"
}

build_initramfs() {
	local out="$1" rootfs="$2" kver="$3" stage m mods
	# Not in a pipe or process substitution, so that die stops the script.
	mods=$(module_closure "$rootfs/lib/modules/$kver" "${INITRD_MODULES[@]}")
	stage="$BUILD_TMP/initramfs"
	mkdir -p "$stage"/{bin,dev,proc,sys,modules}
	cp /bin/busybox "$stage/bin/busybox"
	mknod "$stage/dev/console" c 5 1 && mknod "$stage/dev/null" c 1 3
	: >"$stage/modules.list"
	while IFS= read -r m; do
		case "$m" in
		*.ko.xz) xz -dc "$rootfs/lib/modules/$kver/$m" >"$stage/modules/$(basename "${m%.xz}")" ;;
		*) cp "$rootfs/lib/modules/$kver/$m" "$stage/modules/" ;;
		esac
		basename "${m%.xz}" >>"$stage/modules.list"
	done <<<"$mods"
	write_initramfs_init "$stage/init"
	(cd "$stage" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$out"
}

build_assets() {
	local dest="$1" kdir kver
	BUILD_TMP="$CACHE/vm/.build-$KEY.$$"
	rm -rf "$BUILD_TMP"
	mkdir -p "$BUILD_TMP/deb" "$BUILD_TMP/kernel"
	log "  downloading $KPKG=$KPKG_VER"
	(cd "$BUILD_TMP/deb" && apt-get download -q -o APT::Sandbox::User=root "$KPKG=$KPKG_VER")
	dpkg -x "$BUILD_TMP"/deb/*.deb "$BUILD_TMP/kernel"
	kdir=$(find "$BUILD_TMP/kernel/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n1)
	kver="${kdir##*/}"
	extract_vmlinux "$BUILD_TMP/kernel/boot/vmlinuz-$kver" "$BUILD_TMP/vmlinux" ||
		die "no xz-compressed ELF kernel found in vmlinuz-$kver"
	log "  mmdebstrap rootfs: ${ROOTFS_PACKAGES[*]}"
	build_rootfs "$BUILD_TMP/rootfs"
	log "  kernel modules + depmod, initramfs"
	mkdir -p "$BUILD_TMP/rootfs/usr/lib/modules"
	cp -a "$kdir" "$BUILD_TMP/rootfs/usr/lib/modules/"
	chroot "$BUILD_TMP/rootfs" depmod -a "$kver"
	build_initramfs "$BUILD_TMP/initrd.img" "$BUILD_TMP/rootfs" "$kver"
	rm -rf "$BUILD_TMP/deb" "$BUILD_TMP/kernel" "$BUILD_TMP/initramfs"
	echo "$kver" >"$BUILD_TMP/kver"
	mv "$BUILD_TMP" "$dest"
	BUILD_TMP=""
}

ensure_assets() {
	local key_src old
	pick_kernel
	key_src="rev=$RECIPE_REV kernel=$KPKG=$KPKG_VER rootfs=${ROOTFS_PACKAGES[*]} initrd=${INITRD_MODULES[*]}"
	KEY=$(printf '%s' "$key_src" | sha256sum | cut -c1-12)
	ASSETS="$CACHE/vm/$KEY"
	mkdir -p "$CACHE/vm"
	exec 9>"$CACHE/vm/.lock"
	flock 9
	if [[ -f "$ASSETS/kver" ]]; then
		log "step 2/4: VM assets cached in $ASSETS (kernel $(cat "$ASSETS/kver"))"
	else
		log "step 2/4: building VM assets into $ASSETS ($KPKG $KPKG_VER)"
		build_assets "$ASSETS"
		log "  assets built: kernel $(cat "$ASSETS/kver")"
	fi
	for old in "$CACHE"/vm/* "$CACHE"/vm/.build-*; do
		[[ -e "$old" && "$old" != "$ASSETS" ]] || continue
		log "  removing stale $old"
		rm -rf "$old"
	done
	flock -u 9
}

# The guest's PID 1 after switch_root; it sets up the host-like environment,
# runs guest.sh and reports through isa-debug-exit (port 0xf4: qemu exits 2v+1).
write_guest_init() {
	cat >"$1" <<'EOF'
#!/bin/bash
set -u
export PATH=/opt/cnibench/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8 CNB_VM=1
NINEP_OPTS=ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose
report() {
	printf "\\x$(printf %02x "$1")" | dd of=/dev/port bs=1 seek=244 count=1 status=none
	sleep 3; echo o >/proc/sysrq-trigger; sleep 60
}
die() { echo "cnb-vm init: FATAL: $*"; echo "CNB-VM RESULT: FAIL (exit 125)"; report 125; }
mount -t proc proc /proc && mount -t sysfs sysfs /sys && mount -t devtmpfs devtmpfs /dev || die "proc/sys/dev"
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts || die "devpts"
mount -t tmpfs -o mode=1777 tmpfs /dev/shm || die "/dev/shm"
ln -sfn /proc/self/fd /dev/fd; ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout; ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p /run/lock /run/netns /run/cnb-vm || die "/run"
mount -t tmpfs -o mode=1777 tmpfs /tmp || die "/tmp"
# /var/lib on tmpfs (an overlayfs cannot be containerd's upper dir), seeded from the rootfs.
mkdir /run/cnb-vm/varlib && mount -t tmpfs -o mode=0755 tmpfs /run/cnb-vm/varlib &&
	tar -C /run/cnb-vm/varlib -xf /usr/lib/cnb-vm/var-lib.tar && mount --move /run/cnb-vm/varlib /var/lib || die "/var/lib"
mount -t cgroup2 cgroup2 /sys/fs/cgroup || die "cgroup2"
mode=$(stat -fc %T /sys/fs/cgroup)
echo "cnb-vm: kernel $(uname -r), cgroup mode: $mode, v1 mounts: $(awk '$3 == "cgroup"' /proc/mounts | wc -l)"
[[ "$mode" == cgroup2fs ]] && ! awk '$3 == "cgroup" {f=1} END {exit !f}' /proc/mounts || die "not pure cgroup v2"
# What systemd enables at the root on a stock host; the cluster must enable the rest it needs
# (cpuset, hugetlb) itself.
for c in cpu io memory pids; do
	echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control || echo "cnb-vm: cannot enable controller $c"
done
echo "cnb-vm: root subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
mount -t bpf bpf /sys/fs/bpf || die "bpffs"
echo cnb-vm >/proc/sys/kernel/hostname && echo cnb-vm >/etc/hostname
printf '127.0.0.1\tlocalhost\n127.0.1.1\tcnb-vm\n::1\tlocalhost ip6-localhost ip6-loopback\n' >/etc/hosts
ip link set lo up || die "lo"
command -v modprobe >/proc/sys/kernel/modprobe
mods=(overlay br_netfilter veth bridge vxlan nf_tables nf_conntrack nft_chain_nat nft_ct nft_masq
	iptable_nat iptable_filter ip_tables xt_conntrack xt_MASQUERADE xt_comment xt_mark ip_set)
modprobe -a -q "${mods[@]}" # one process: each modprobe costs ~0.4 s under TCG
loaded="" missing=""
for m in "${mods[@]}"; do
	if [[ -d /sys/module/$m ]] || modprobe -q "$m"; then loaded+=" $m"; else missing+=" $m"; fi
done
echo "cnb-vm: modules loaded:$loaded; unavailable:${missing:- none}"
tags=$(cat /sys/bus/virtio/drivers/9pnet_virtio/virtio*/mount_tag 2>/dev/null | tr '\0' ' ')
if [[ " $tags " == *" cnbbin "* ]]; then
	mkdir -p /opt/cnibench/bin && mount -t 9p -o "$NINEP_OPTS" cnbbin /opt/cnibench/bin || die "cnbbin"
fi
mkdir -p /run/cnb-vm/cache-lower /run/cnb-vm/cache-upper /run/cnb-vm/cache-work /var/cache/cnibench
mount -t 9p -o "$NINEP_OPTS" cnbcache /run/cnb-vm/cache-lower &&
	mount -t overlay -o lowerdir=/run/cnb-vm/cache-lower,upperdir=/run/cnb-vm/cache-upper,workdir=/run/cnb-vm/cache-work \
		overlay /var/cache/cnibench || die "cache overlay"
. /cnb-vm/config
echo "cnb-vm: running /cnb-vm/guest.sh (timeout ${GUEST_TIMEOUT}s)"
cd /root 2>/dev/null || cd /
timeout -k 30 "$GUEST_TIMEOUT" bash /cnb-vm/guest.sh </dev/null 2>&1
rc=$?
if ((rc == 0)); then
	echo "CNB-VM RESULT: PASS"
	report 0
fi
echo "CNB-VM RESULT: FAIL (exit $rc)"
((rc >= 1 && rc <= 127)) || rc=127
report "$rc"
EOF
	chmod 755 "$1"
}

write_smoke_script() {
	cat >"$1" <<'EOF'
#!/bin/bash
# Default smoke test: pure cgroup v2 with delegation, netns, veth, bridge, vxlan, nft.
set -euo pipefail
cg=/sys/fs/cgroup
cleanup() {
	local rc=$?
	set +e; exec 2>/dev/null
	[[ -n "${pid:-}" ]] && kill "$pid" && wait "$pid"
	rmdir "$cg/cnb-smoke/leaf" "$cg/cnb-smoke"
	ip netns del cnb-smoke; ip link del cnb-vx0; ip link del cnb-br0
	nft delete table inet cnb_smoke
	exit "$rc"
}
trap cleanup EXIT
ok() { echo "smoke: ok: $*"; }
[[ $(stat -fc %T $cg) == cgroup2fs ]] && awk '$3 == "cgroup" {exit 1}' /proc/mounts
ok "cgroup2 only ($(grep -c cgroup2 /proc/mounts) cgroup2 mount)"
for c in cpuset cpu io memory pids; do grep -qw "$c" $cg/cgroup.controllers; done
ok "controllers: $(cat $cg/cgroup.controllers)"
mkdir $cg/cnb-smoke
echo "+cpu +memory +pids" >$cg/cnb-smoke/cgroup.subtree_control
mkdir $cg/cnb-smoke/leaf
echo "50000 100000" >$cg/cnb-smoke/leaf/cpu.max
echo $((256 << 20)) >$cg/cnb-smoke/leaf/memory.max
echo 64 >$cg/cnb-smoke/leaf/pids.max
sleep 300 &
pid=$!
echo "$pid" >$cg/cnb-smoke/leaf/cgroup.procs
grep -qx "0::/cnb-smoke/leaf" "/proc/$pid/cgroup"
[[ $(cat $cg/cnb-smoke/leaf/pids.current) == 1 ]]
ok "child cgroup with cpu/memory/pids limits, process moved in ($(cat $cg/cnb-smoke/leaf/cgroup.controllers))"
ip netns add cnb-smoke
ip link add cnb-v0 type veth peer name cnb-v1
ip link set cnb-v1 netns cnb-smoke
ip link add cnb-br0 type bridge
ip link set cnb-v0 master cnb-br0
ip addr add 10.250.0.1/24 dev cnb-br0
ip link set cnb-br0 up && ip link set cnb-v0 up
ip -n cnb-smoke addr add 10.250.0.2/24 dev cnb-v1
ip -n cnb-smoke link set cnb-v1 up && ip -n cnb-smoke link set lo up
busybox ping -c 1 -W 5 10.250.0.2 >/dev/null
ok "netns + veth + bridge (ping across)"
ip link add cnb-vx0 type vxlan id 42 dstport 4789 local 10.250.0.1 dev cnb-br0
ok "vxlan"
nft add table inet cnb_smoke
nft add chain inet cnb_smoke post '{ type nat hook postrouting priority 100; }'
nft add rule inet cnb_smoke post ip saddr 10.250.0.0/24 masquerade
nft delete table inet cnb_smoke
ok "nft table create/delete (with a masquerade rule)"
echo "smoke: all checks passed"
EOF
}

prepare_share() {
	SHARE=$(mktemp -d /tmp/cnb-vm.XXXXXX)
	chmod 755 "$SHARE"
	write_guest_init "$SHARE/init"
	if [[ "$1" == smoke ]]; then
		write_smoke_script "$SHARE/guest.sh"
	else
		[[ -f "$1" ]] || die "guest script $1 not found"
		cp "$1" "$SHARE/guest.sh"
	fi
	chmod 755 "$SHARE/guest.sh"
	# The guest stops its script a minute before the host stops the VM.
	echo "GUEST_TIMEOUT=$((TIMEOUT > 120 ? TIMEOUT - 60 : 60))" >"$SHARE/config"
	if [[ -n "${CNB_VM_DATAPATHS:-}" ]]; then
		printf 'export CNB_VM_DATAPATHS=%q\n' "$CNB_VM_DATAPATHS" >>"$SHARE/config"
	fi
}

# run_vm boots the VM. The emulated CPU is qemu64 by default, not max: software emulation of the
# newer instruction sets (AVX, SHA, CLMUL) costs more than the scalar code the guest's Go
# binaries fall back to: gzip and SHA-256 over the cluster's images ran in 22-24 s as qemu64
# against 30-32 s as max (qemu-x86_64, interleaved), and the whole VM test took 530 s against
# 601 s (14.7 against 16.8 CPU-minutes).
run_vm() {
	local vfs="security_model=none,readonly=on,multidevs=remap" args
	choose_accel
	# shellcheck disable=SC2054 # the commas belong to qemu options
	args=(-accel "$ACCEL" -cpu "$CPU" -m "$MEM" -smp "$SMP" -nographic -nic none -no-reboot
		-kernel "$ASSETS/vmlinux" -initrd "$ASSETS/initrd.img"
		-append "console=ttyS0 panic=-1 quiet cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1 ${CNB_VM_APPEND:-}"
		-virtfs "local,path=$ASSETS/rootfs,mount_tag=rootfs,$vfs,id=r"
		-virtfs "local,path=$SHARE,mount_tag=cnbvm,$vfs,id=s"
		-virtfs "local,path=$CACHE,mount_tag=cnbcache,$vfs,id=c"
		-device isa-debug-exit,iobase=0xf4,iosize=0x04)
	if [[ -d "$BIN_DIR" ]]; then
		args+=(-virtfs "local,path=$BIN_DIR,mount_tag=cnbbin,$vfs,id=b")
	else
		log "  warning: $BIN_DIR does not exist; /opt/cnibench/bin stays empty"
	fi
	mkdir -p "$(dirname "$LOG")"
	: >"$LOG"
	log "step 4/4: booting VM (${ACCEL^^}, -cpu $CPU, ${SMP} CPUs, ${MEM} MiB, timeout ${TIMEOUT}s), console log $LOG"
	timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${args[@]}" </dev/null >>"$LOG" 2>&1 &
	QEMU_PID=$!
	tail -n +1 -f --pid="$QEMU_PID" "$LOG" | sed -u -e 's/\r$//' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/^/  vm| /' &
	TAIL_PID=$!
	VM_RC=0
	wait "$QEMU_PID" || VM_RC=$?
	QEMU_PID=""
	wait "$TAIL_PID" 2>/dev/null || true
	TAIL_PID=""
}

# choose_accel settles ACCEL (auto becomes kvm when /dev/kvm can be opened for writing, else
# tcg) and the CPU model that goes with it, unless CNB_VM_CPU names one.
choose_accel() {
	case "$ACCEL" in
	auto)
		if [[ -c /dev/kvm ]] && { : <>/dev/kvm; } 2>/dev/null; then ACCEL=kvm; else ACCEL=tcg; fi
		;;
	kvm | tcg) ;;
	*) die "CNB_VM_ACCEL must be kvm, tcg or auto, not $ACCEL" ;;
	esac
	if [[ -z "$CPU" ]]; then
		if [[ "$ACCEL" == kvm ]]; then CPU=host,-cx16; else CPU=qemu64; fi
	fi
}

report_result() {
	local rc="$VM_RC" secs="$1" line
	line=$(grep -a -o 'CNB-VM RESULT: .*' "$LOG" | tr -d '\r' | tail -n1 || true)
	if ((rc == 1)) && [[ "$line" == "CNB-VM RESULT: PASS" ]]; then
		log "PASS: guest script passed on a pure cgroup v2 VM (${secs}s)"
		exit 0
	elif ((rc == 124 || rc == 137)); then
		log "FAIL: VM timed out after ${TIMEOUT}s (see $LOG)" >&2
		exit 124
	elif ((rc % 2 == 1 && rc > 1)); then
		# 124 is the guest-side timeout, 125/126 setup failures of init/initramfs.
		log "FAIL: guest script failed: ${line:-code $(((rc - 1) / 2))} (see $LOG)" >&2
		exit 1
	elif ((rc == 0)); then
		die "VM stopped without reporting a result (boot failure or guest crash; see $LOG)"
	else
		die "qemu failed with exit code $rc (see $LOG)"
	fi
}

main() {
	local start
	[[ $(id -u) -eq 0 ]] || die "run as root"
	(($# <= 1)) || die "usage: $0 [GUEST_SCRIPT | smoke | prepare]"
	[[ "$TIMEOUT" =~ ^[0-9]+$ && "$MEM" =~ ^[0-9]+$ && "$SMP" =~ ^[0-9]+$ ]] ||
		die "CNB_VM_TIMEOUT, CNB_VM_MEM and CNB_VM_SMP must be integers"
	start=$(date +%s)
	trap cleanup EXIT
	trap 'log "interrupted" >&2; cleanup; exit 130' INT
	trap 'log "terminated" >&2; cleanup; exit 143' TERM
	log "vm-cgroupv2: repo $ROOT, cache $CACHE"
	ensure_host_packages
	ensure_assets
	if [[ "${1:-}" == prepare ]]; then
		log "prepared: host packages and VM assets ready"
		exit 0
	fi
	local guest="${1:-$ROOT/test/vm/cluster.sh}"
	log "step 3/4: guest share ($guest)"
	prepare_share "$guest"
	run_vm
	report_result "$(($(date +%s) - start))"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	main "$@"
fi
