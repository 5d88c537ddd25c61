#!/bin/sh
# /init of the test VM (busybox sh). Sets up the kernel modules, the disks with project
# quotas and cgroup v2 with delegated subtrees, runs the bats suite as root and then as
# the unprivileged user sbxuser, and streams the TAP output over the second serial port
# (ttyS1) between markers the host checks. Powers off in every case.
# With a Debian root on the third disk (run.sh --debian-root), it runs from there, under
# busybox's sh, with the tools the root has installed in /usr/bin.
export PATH=/sbx/bin:/sbx/helpers:/usr/sbin:/usr/bin:/sbin:/bin:/sbx/busybox-bin
set -o pipefail
CONTROLLERS="cpu memory pids io"

# pivot_root(2) refuses to move away from the initramfs (its mount has no parent), and
# sbx-ns pivots into the sandbox's root: copy the files to a tmpfs and make that the root
# first. switch_root empties the initramfs and execs this script again from the tmpfs.
if [ -e /etc/sbxvm-rootdisk ]; then
	mount -t devtmpfs devtmpfs /dev || poweroff -f
	while read -r kind path; do
		insmod "$path" 2>/dev/console || [ "$kind" = soft ] || poweroff -f
	done </etc/sbxvm-modules
	i=0
	while [ ! -b /dev/vdc ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	mkdir /newroot && mount -t ext4 /dev/vdc /newroot ||
		{ echo "init: fatal: unable to mount the Debian root /dev/vdc" >/dev/console; poweroff -f; }
	umount /dev
	exec switch_root /newroot /sbx/busybox sh /init
fi
if [ ! -e /.sbxvm-tmpfs-root ] && [ ! -e /.sbxvm-debian-root ]; then
	mkdir /newroot && mount -t tmpfs -o mode=0755 tmpfs /newroot || poweroff -f
	for d in /* /.[!.]*; do
		case $d in
		/newroot | '/.[!.]*') ;;
		/proc | /sys | /dev) mkdir -p "/newroot$d" ;;
		*) cp -a "$d" /newroot/ || poweroff -f ;;
		esac
	done
	: >/newroot/.sbxvm-tmpfs-root
	exec switch_root /newroot /init
fi

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s fd/0 /dev/stdin
ln -s fd/1 /dev/stdout
ln -s fd/2 /dev/stderr
dmesg -n 1

stty -F /dev/ttyS1 raw -echo 2>/dev/null
exec 3>/dev/ttyS1
say() { echo "SBXVM $*" >&3; }
uptime_s() { read -r up _ </proc/uptime; echo "${up%.*}"; }
off() { exec 3>&-; sync; poweroff -f; sleep 60; }
fatal() { say "FATAL $*"; echo "init: fatal: $*" >/dev/console; off; }

bin=/sbx/bin
if [ -e /.sbxvm-debian-root ]; then
	# Loaded before the switch; the package is installed as an administrator would, on
	# a system with AppArmor active: its interface mounted, as systemd mounts it.
	bin=/usr/bin
	mount -t securityfs securityfs /sys/kernel/security || fatal "unable to mount securityfs"
	for deb in /sbx/deb/*.deb; do
		[ -e "$deb" ] || continue
		# By its path: busybox's sh would run its own dpkg applet for `dpkg`.
		/usr/bin/dpkg -i "$deb" >/dev/console 2>&1 || fatal "dpkg -i $deb failed"
	done
else
	while read -r kind path; do
		insmod "$path" 2>/dev/console || [ "$kind" = soft ] || fatal "unable to load $path"
	done </etc/sbxvm-modules
fi

i=0
while [ ! -b /dev/vdb ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
mount -t xfs -o prjquota /dev/vda /mnt/xfs || fatal "unable to mount /dev/vda on /mnt/xfs with prjquota"
mount -t ext4 -o prjquota /dev/vdb /mnt/ext4 || fatal "unable to mount /dev/vdb on /mnt/ext4 with prjquota"
chmod 1777 /mnt/xfs /mnt/ext4

mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || fatal "unable to mount cgroup2"
enable=""
for c in $CONTROLLERS; do enable="$enable +$c"; done
echo "$enable" >/sys/fs/cgroup/cgroup.subtree_control || fatal "unable to enable$enable in the root cgroup"

# Each role gets a subtree with the controllers enabled for its children, and the runner
# in a leaf of it (no internal processes), so tests create siblings of the runner and can
# move processes into them. The user's subtree is delegated as cgroup-v2.rst says: the
# directory and its cgroup.procs, cgroup.threads and cgroup.subtree_control.
for role in root user; do
	cg=/sys/fs/cgroup/sbx-$role
	mkdir -p "$cg/runner" || fatal "unable to create $cg/runner"
	echo "$enable" >"$cg/cgroup.subtree_control" || fatal "unable to enable$enable in $cg"
done
cg=/sys/fs/cgroup/sbx-user
chown 1000:1000 "$cg" "$cg/cgroup.procs" "$cg/cgroup.threads" "$cg/cgroup.subtree_control" \
	"$cg/runner" "$cg/runner/cgroup.procs" "$cg/runner/cgroup.threads" \
	"$cg/runner/cgroup.subtree_control" || fatal "unable to delegate $cg"

# Project-quota directories prepared for the user run: an unprivileged user cannot set
# project ids or limits itself. Same limits as the root run's own directories.
for fs in xfs:2000 ext4:2001; do
	d=/mnt/${fs%:*}/sbxuser-quota
	mkdir -p "$d" && quota-set "$d" "${fs#*:}" 8388608 16 && chown 1000:1000 "$d" ||
		fatal "unable to prepare $d"
	# The record an unprivileged sbx-quota verify needs to take statfs's figure as the
	# hard limit (soft limits cleared); the runner's own tests boot without sbx.
	if [ -x $bin/sbx-quota ]; then
		$bin/sbx-quota prepare --workspace "$d" --project "${fs#*:}" --disk 8M --inodes 16 ||
			fatal "unable to record the limits of $d with sbx-quota prepare"
	fi
done
chown 1000:1000 /home/sbxuser

# A hung test fails alone, named, instead of eating the host's timeout for the whole VM.
test_timeout=120
roles=root,user
for arg in $(cat /proc/cmdline); do
	case $arg in
	sbxvm.test_timeout=*) test_timeout=${arg#*=} ;;
	sbxvm.roles=*) roles=${arg#*=} ;;
	esac
done

say "BEGIN booted in $(uptime_s) s, kernel $(uname -r), controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control), swap: none, disks: /mnt/xfs (xfs,prjquota) /mnt/ext4 (ext4,prjquota)"

run_role() {
	role=$1 uid=$2 home=$3 cg=/sys/fs/cgroup/sbx-$1
	say "ROLE $role"
	t0=$(uptime_s)
	# Only this script writes markers: a test printing one is neutralised by the sed.
	(
		echo 0 >"$cg/runner/cgroup.procs" || exit 111
		cd /sbx/tests || exit 111
		exec env -i PATH="$PATH" HOME="$home" USER="$4" LOGNAME="$4" TERM=dumb \
			TMPDIR=/tmp SBX_VM_ROLE="$role" SBX_VM_CGROUP="$cg" SBX_BIN=$bin SBX_TESTBIN=/sbx/testbin \
			SBX_VM_HELPERS=/sbx/helpers BATS_LIB_PATH=/usr/lib/bats BATS_TEST_TIMEOUT="$test_timeout" \
			runas "$uid" "$uid" bats --tap /sbx/tests/*.bats
	) 2>/dev/console | sed 's/^SBXVM/#SBXVM/' >&3
	rc=$?
	say "ROLE-END $role status=$rc seconds=$(($(uptime_s) - t0))"
}
case ,$roles, in *,root,*) run_role root 0 /root root ;; esac
case ,$roles, in *,user,*) run_role user 1000 /home/sbxuser sbxuser ;; esac
say END
off
