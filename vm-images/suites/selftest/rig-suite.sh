# Shared helpers of the selftest, drc, kclient and bench-interop suites (put into the share as
# /rig/lib/rig-suite.sh by each suite's extra_files; sourced by their scripts after lib.sh).
#   RIG            the rig binary built on the host (bookworm, same as the guests)
#   rxe_up         the run's soft-RDMA device on eth0 (rdma_up of lib.sh; idempotent)
#   capture_start  the suite's RDMA capture, cut per case into /rig/out/<case>.pcap
#   run_scenario   one `rig scenarios --transport rdma` run → /rig/out/<case>.verdict.json + RESULT
#   rig_guest      `rig guest <command>`: a RESULT line rig writes from its own JSON, read with its
#                  own types (crates/rig/src/guest.rs); no script here parses JSON
#   serve_start / serve_stop       `rig serve` in the background, its --stats JSON into /rig/out
#   closed_connections / SCENARIO_JUDGE_ARGS   re-judge a case's verdict with `rig serve`'s counts
# The host's rig binary (~20 MB) is read over 9p with cache=none on every exec. The short-lived
# per-case commands (`rig scenarios`, `rig judge`) run from a copy in this guest's tmpfs, made on
# first use ($RIG_CASE_BIN); long-lived ones (`rig serve`) and guests that never run rig (the
# kernel client in kclient, which needs its 256 MiB for 16 MiB of writeback) keep /rig/bin/rig
# and pay nothing.
RIG=/rig/bin/rig
rig_case_bin() {
  if [ ! -x /run/rig ] && [ -x "$RIG" ]; then
    cp "$RIG" /run/rig.tmp 2>/dev/null && mv /run/rig.tmp /run/rig
  fi
  if [ -x /run/rig ]; then RIG_CASE_BIN=/run/rig; else RIG_CASE_BIN=$RIG; fi
}
NFS_RDMA_PORT=20049
MOUNT_TCP_PORT=20048
# The server's execution hold (crates/rdma/src/serve_control.rs, SERVE_CONTROL_PORT): answered by
# `rig serve --control` (selftest) or `rig hold-export` beside kernel nfsd (drc).
EXECUTION_HOLD_PORT=4793

rxe_up() { rdma_up; }

# client_up: the client side every suite starts from: soft-RoCE on eth0 and a reachable server
# (it may still be booting: up to 60 one-second pings, then one that must answer).
client_up() {
  rxe_up
  for i in $(seq 60); do ping -c 1 -W 1 "$RIG_SERVER_IP" > /dev/null && break; done
  rig_check ping ping -c 1 -W 2 "$RIG_SERVER_IP"
}

# The export options of the nfsd suites: rig's client sends AUTH_NONE, so accept that flavour
# (sec=sys:none) and map the anonymous user to root, or nfsd answers every LOOKUP/CREATE/REMOVE
# with NFS3ERR_ACCES (seen in the first drc run). Suites append their fsid.
NFSD_EXPORT_OPTS=rw,sec=sys:none,anonuid=0,anongid=0,no_root_squash,insecure,sync,no_subtree_check

# nfsd_rdma_up <export options> [rpc.mountd args...]: the kernel server every nfsd suite starts
# from: soft-RoCE, the nfsd fs, a 96 MiB tmpfs /export shared with $RIG_CLIENT_IP, rpcbind,
# rpc.mountd, 8 nfsd threads and an RDMA listener on $NFS_RDMA_PORT. NFSD_GRACE_SECS, when set,
# shortens the NFSv4 grace period and lease first (NFSv4 calls are held off during grace). A
# failed step fails the case.
nfsd_rdma_up() {
  opts=$1; shift
  rxe_up
  mkdir -p /proc/fs/nfsd /export /var/lib/nfs/v4recovery /run/rpcbind
  rig_check nfsd-fs mount -t nfsd nfsd /proc/fs/nfsd
  if [ "${NFSD_EXPORT_FS:-tmpfs}" = ext4 ]; then
    # A file system a case can freeze (`rig hold-export`: fsfreeze, so nfsd's procedure blocks
    # inside it with its DRC entry in progress); tmpfs cannot be frozen. ext4 on a loop device
    # over a file in a tmpfs of its own, the same 96 MiB.
    mkdir -p /run/rig-export
    modprobe -q loop 2>/dev/null # built in on the rig's own kernels
    rig_check export-img-fs mount -t tmpfs -o size=100m tmpfs /run/rig-export
    rig_check export-img truncate -s 96m /run/rig-export/export.img
    rig_check export-mkfs mke2fs -q -F -t ext4 -L rigexport /run/rig-export/export.img
    # losetup first, then mount: `mount -o loop` keeps the loop device open for writing while
    # it mounts, which a kernel without CONFIG_BLK_DEV_WRITE_MOUNTED (the rig's own) refuses.
    loopdev=$(losetup -f --show /run/rig-export/export.img) || { rig_result fail step=export-loop; exit 1; }
    rig_check export-fs mount -t ext4 "$loopdev" /export
  else
    rig_check export-fs mount -t tmpfs -o size=96m tmpfs /export
  fi
  chmod 0777 /export
  echo "/export $RIG_CLIENT_IP/32($opts)" > /etc/exports
  rig_check rpcbind rpcbind -w
  rig_check exportfs exportfs -ra
  rig_check mountd rpc.mountd "$@"
  if [ -n "${NFSD_GRACE_SECS:-}" ]; then
    echo "$NFSD_GRACE_SECS" > /proc/fs/nfsd/nfsv4gracetime
    echo "$NFSD_GRACE_SECS" > /proc/fs/nfsd/nfsv4leasetime
  fi
  rig_check nfsd rpc.nfsd 8
  rig_check rdma-listener sh -c "echo 'rdma $NFS_RDMA_PORT' > /proc/fs/nfsd/portlist"
  cat /proc/fs/nfsd/portlist
  grep -q "rdma $NFS_RDMA_PORT" /proc/fs/nfsd/portlist || { rig_result fail step=portlist; exit 1; }
}

# capture_start: the run's RDMA traffic on eth0 ($RIG_CAPTURE_FILTER). One tcpdump runs for the
# whole suite (started by the first case; starting one per case cost seconds under TCG and cut
# cases whose tcpdump lagged); each case's `rig scenarios` records its window in
# /rig/out/capture.windows (--capture-windows), and the host cuts the suite's capture into
# <case>.pcap (interop/src/capture.rs). driver.sh stops it at the end. Builtins only once it
# runs (`read`, `kill -0`): an exec is 30-100 ms of a guest's TCG CPU.
capture_start() {
  capture_pid=
  [ -r /tmp/suite-capture.pid ] && read -r capture_pid < /tmp/suite-capture.pid
  if ! kill -0 "${capture_pid:-none}" 2>/dev/null; then
    # Its own session: a case killed by its timeout must not take the suite capture with it.
    setsid tcpdump -i eth0 -s 0 -U -w /tmp/suite.pcap $RIG_CAPTURE_FILTER 2>/tmp/suite-capture.err &
    echo $! > /tmp/suite-capture.pid
    # tcpdump needs a moment to open the socket under TCG; without it the CM handshake is lost.
    i=0
    until grep -q listening /tmp/suite-capture.err 2>/dev/null; do
      i=$((i + 1))
      [ "$i" -gt 75 ] && { echo "capture_start: tcpdump not listening after 15 s"; break; }
      sleep 0.2
    done
  fi
}

# rig_show <file>: print a small file with builtins (a `cat` exec is 30-100 ms of TCG CPU).
rig_show() {
  [ -r "$1" ] || return 0
  while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done < "$1"
}

# rig_guest <command> [args...]: `rig guest <command>` for this case and role. The *-result
# commands print the case's RESULT line (JSON, verdict::guest::GuestResult) and exit 0 pass,
# 1 fail, 3 skip; 2 is rig failing before its line, which is then a fail line here (an earlier
# pass of the role must not stand for a result never written).
rig_guest() {
  guest_cmd=$1; shift
  rig_case_bin
  "$RIG_CASE_BIN" guest "$guest_cmd" --case "$RIG_CASE" --role "$RIG_name" "$@"
  guest_rc=$?
  [ "$guest_rc" = 2 ] && rig_result fail step=rig-guest-$guest_cmd rc=2
  return $guest_rc
}

# run_scenario <label> <scenario> <rig scenarios args...>: run one scenario over RDMA with a
# capture, keep the JSON verdict, and report what was observed. The guest verdict is `pass` when
# the scenario ran to a verdict; whether that verdict is the expected one is the host's snapshot
# comparison (fixtures/snapshots/interop/) and expected-differences.toml. SCENARIO_JUDGE_ARGS
# (selftest, against `rig serve`: `--serve-stats <stats> --closed-before <n>`) has the same
# `rig guest` call then re-judge a scenario that ran with the executions `rig serve` counted.
run_scenario() {
  label=$1; scenario=$2; shift 2
  out="$RIG_OUT/$RIG_CASE.verdict.json"
  capture_start
  rig_case_bin
  # --relay: the guests' wire is the rig's relay (interop/src/wire.rs); the holds it makes on
  # the wire (the server's Send completions) force the orderings the scenario asks for.
  "$RIG_CASE_BIN" scenarios --transport rdma --server "$RIG_SERVER_IP:$NFS_RDMA_PORT" --relay \
    --scenario "$scenario" --format json --label "$label" "$@" \
    --capture-windows "$RIG_OUT/capture.windows" --capture-case "$RIG_CASE" \
    > "$out" 2> "/tmp/$RIG_CASE.err"
  rc=$?
  rig_show "/tmp/$RIG_CASE.err"
  rig_show "$out"
  # The verdict read as rig's own type: pass when the scenario ran to a verdict ("ok", exit 0),
  # skip when this transport cannot run it ("unsupported-on-rdma": it sent nothing, the
  # verdict's note is the reason, nothing to re-judge), fail otherwise (no verdict for the
  # scenario: `rig scenarios` failed). The judgement/failure fields are the one rule on the
  # *inferred* executions; the server side (drc) or SCENARIO_JUDGE_ARGS (selftest: a second
  # RESULT line, after waiting for `rig serve` to see the scenario's connections close so its
  # counts are final) re-judges with counted executions. A count that failed is a harness
  # failure of the case, never a pass. (Unquoted: words; the paths have no spaces.)
  # shellcheck disable=SC2086
  rig_guest scenario-result --verdict "$out" --scenario "$scenario" --label "$label" --rc "$rc" \
    --stderr "/tmp/$RIG_CASE.err" ${SCENARIO_JUDGE_ARGS:-}
  case $? in
    0|3) return 0 ;;
    *) return 1 ;;
  esac
}

# serve_start <policy> [rig serve args...]: our server on $NFS_RDMA_PORT in its own session (it
# must outlive this case's script), its stats in /rig/out/serve-<policy>.stats.json.
serve_start() {
  policy=$1; shift
  serve_stop
  setsid "$RIG" serve --listen "$RIG_SERVER_IP:$NFS_RDMA_PORT" --policy "$policy" \
    --export /export --stats "$RIG_OUT/serve-$policy.stats.json" "$@" \
    > "$RIG_OUT/serve-$policy.log" 2>&1 < /dev/null &
  echo $! > /tmp/serve.pid
  echo "$policy" > /tmp/serve.policy
  # rdma_cm listeners are visible as cm_ids in LISTEN state; wait for ours (bounded).
  for i in $(seq 50); do
    kill -0 "$(cat /tmp/serve.pid)" 2>/dev/null || { cat "$RIG_OUT/serve-$policy.log"; return 1; }
    rdma resource show cm_id 2>/dev/null | grep -q "LISTEN.*$NFS_RDMA_PORT\|$NFS_RDMA_PORT.*LISTEN" && return 0
    sleep 0.2
  done
  # older iproute2 may not print the port: a live process after 10 s is the best evidence left.
  kill -0 "$(cat /tmp/serve.pid)" 2>/dev/null
}

# serve_stop: SIGTERM makes `rig serve` write its --stats JSON and exit 0 (bounded wait).
serve_stop() {
  [ -f /tmp/serve.pid ] || return 0
  pid=$(cat /tmp/serve.pid)
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    echo "rig serve ($pid) ignored SIGTERM for 10 s"
    rm -f /tmp/serve.pid
    return 1
  fi
  rm -f /tmp/serve.pid
}

# closed_connections <stats file>: connections `rig serve` has seen close (0 when the file is not
# there yet).
closed_connections() {
  rig_case_bin
  "$RIG_CASE_BIN" guest closed-connections "$1"
}

