# Helpers for suite scripts (sourced by driver.sh; available to every case script).
# RESULT lines are the machine-readable contract with the host (interop/src/results.rs):
#   RESULT {"schema":1,"case":...,"role":...,"verdict":...,"fields":{...}}   (`rig guest`, from
#          rig's own typed outputs: crates/verdict/src/guest.rs; suites use rig_guest)
#   RESULT case=<case> role=<srv|cli> verdict=<pass|fail|skip> [key=value ...]   (rig_result, for
#          steps that run no rig; values: no spaces)
RIG_OUT=/rig/out
RIG_SYNC=/rig/out/sync
RIG_SERVER_IP=10.99.0.1
RIG_CLIENT_IP=10.99.0.2

# The run's soft-RDMA provider (interop puts rig.transport= on the kernel command line, from the
# matrix entry's `transport`): rxe (soft-RoCE, RoCEv2 over UDP 4791) or siw (soft-iWARP: MPA,
# DDP and RDMAP over TCP). RIG_RDMA_DEV is the device rdma_up adds on eth0; RIG_CAPTURE_FILTER
# the tcpdump filter that keeps its RDMA traffic (siw's is all TCP: NFS/RDMA connects to 20049
# and rig's own listeners to others, over TCP itself).
RIG_TRANSPORT=rxe
for rig_word in $(cat /proc/cmdline); do
  case "$rig_word" in rig.transport=*) RIG_TRANSPORT=${rig_word#rig.transport=} ;; esac
done
case "$RIG_TRANSPORT" in
  siw) RIG_RDMA_MODULE=siw RIG_CAPTURE_FILTER=tcp ;;
  *) RIG_TRANSPORT=rxe RIG_RDMA_MODULE=rdma_rxe RIG_CAPTURE_FILTER='udp port 4791' ;;
esac
RIG_RDMA_DEV=${RIG_TRANSPORT}0

# `set -x` traces carry the guest uptime, so slow steps show up in the case logs. PS4 is expanded
# for every traced line: reading the uptime with builtins costs a fork, where `cut` cost a fork and
# an exec (0.03-0.1 s a line under TCG, a third of a short case's time).
rig_uptime() { read -r up _ < /proc/uptime; echo "$up"; }
PS4='+[$(rig_uptime)] '

rig_log() { echo "[$RIG_name $(rig_uptime)] $*"; }

# rig_result <pass|fail> [key=value ...]
rig_result() {
  verdict=$1; shift
  echo "RESULT case=$RIG_CASE role=$RIG_name verdict=$verdict $*"
}

# rig_check <label> <command...>: run a command, report fail with its exit code if it fails.
rig_check() {
  label=$1; shift
  "$@"; rc=$?
  [ "$rc" = 0 ] && return 0
  rig_result fail step=$label rc=$rc
  exit 1
}

# rig_wait_file <path> <seconds>: poll for a file (9p, cache=none), bounded. The interval grows
# from 0.1 s to 0.5 s: most waits end within a second, and a waiting guest (the server waits for
# the client through every case) then spends at most two `sleep` execs a second of its TCG CPU.
rig_wait_file() {
  left=$(( $2 * 10 )) tenths=1
  while [ "$left" -gt 0 ]; do
    [ -e "$1" ] && return 0
    sleep "0.$tenths"; left=$(( left - tenths ))
    [ "$tenths" -lt 5 ] && tenths=$(( tenths + 1 ))
  done
  [ -e "$1" ]
}

# The server side of a case calls this once it is listening; the client waits for it.
rig_ready() { : > "$RIG_SYNC/$RIG_CASE.srv.ready"; }

# A server script waits here until the client side of the same case has finished.
rig_wait_client_done() { rig_wait_file "$RIG_SYNC/$RIG_CASE.cli.done" "${1:-120}"; }

# rig_clock: RIG_CLOCK_CS = the guest's uptime in centiseconds, read with builtins (no fork, no
# exec; `date` cost an exec per call under TCG). /proc/uptime always has two decimals.
rig_clock() {
  read -r up _ < /proc/uptime
  RIG_CLOCK_CS=$(( ${up%.*} * 100 + 1${up#*.} - 100 ))
}

# rig_namespace_ops <dir> <symlink: yes|no>: on an NFS mount, mkdir <dir>, create f1..f5, rename
# f1, remove f2 (and symlink "link" to the renamed file), list the directory and read the renamed
# file (through the link when there is one), then remove the tree. Reports fail and exits at the
# first broken step; sets $listing (names, comma-terminated) and $content.
rig_namespace_ops() {
  dir=$1 symlink=$2
  rig_check mkdir mkdir "$dir"
  for i in 1 2 3 4 5; do echo "file $i" > "$dir/f$i" || { rig_result fail step=create; exit 1; }; done
  rig_check rename mv "$dir/f1" "$dir/renamed"
  rig_check remove rm "$dir/f2"
  read_as=renamed
  if [ "$symlink" = yes ]; then
    rig_check symlink ln -s renamed "$dir/link"
    read_as=link
  fi
  listing=$(ls "$dir" | tr '\n' ',')
  content=$(cat "$dir/$read_as")
  rig_check rmtree rm -r "$dir"
  [ -e "$dir" ] && { rig_result fail step=rmdir; exit 1; }
}

# rig_write_remount_read <mount-command> <mountpoint> <file> <KiB>: write <KiB> random bytes to
# <mountpoint>/<file>, unmount, drop the page cache, mount again with <mount-command>, read the
# file back and unmount. Sets $written and $read_back (md5) and $bytes (size read back).
rig_write_remount_read() {
  remount=$1 mnt=$2 file=$3 kib=$4
  dd if=/dev/urandom of="/tmp/$file" bs=1024 count="$kib" 2>/dev/null
  written=$(md5sum < "/tmp/$file" | cut -d' ' -f1)
  rig_check write cp "/tmp/$file" "$mnt/$file"
  sync
  rig_check umount umount "$mnt"
  echo 3 > /proc/sys/vm/drop_caches
  $remount
  read_back=$(md5sum < "$mnt/$file" | cut -d' ' -f1)
  bytes=$(stat -c %s "$mnt/$file")
  rig_check umount2 umount "$mnt"
}

# rig_mount_nfs_rdma <mountpoint> <options> <export>: mount an NFS export; fails the case unless
# the mount really went over RDMA (proto=rdma in /proc/mounts).
rig_mount_nfs_rdma() {
  mkdir -p "$1"
  rig_check mount mount -t nfs -o "$2" "$3" "$1"
  grep " $1 " /proc/mounts
  grep " $1 " /proc/mounts | grep -q 'proto=rdma' || { rig_result fail step=proto-not-rdma; exit 1; }
}

# rdma_up: the run's soft-RDMA device on eth0 (idempotent). Source-built kernels have the
# provider built in, where modprobe of a builtin answers 0 from modules.builtin.
rdma_up() {
  rdma link show 2>/dev/null | grep -q "link $RIG_RDMA_DEV/" && return 0
  rig_check modprobe modprobe "$RIG_RDMA_MODULE"
  rig_check "$RIG_TRANSPORT" rdma link add "$RIG_RDMA_DEV" type "$RIG_TRANSPORT" netdev eth0
  rdma link show
}
