# Server side of case nfsd.v41-<scenario>: snapshot /proc/net/rpc/nfsd and dmesg before the client
# starts (the driver starts it only after rig_ready) and after it is done, and report the deltas:
# the `proc4` line (COMPOUNDs) and the `proc4ops` line per operation (nfsd counts each operation
# it processes, failed ones included; a COMPOUND answered from the slot replay cache stops after
# SEQUENCE, so `proc4ops_remove` is the grace probe plus the REMOVEs nfsd really executed).
# The deltas go into out/<case>.kernel.txt next to the client's verdict.
. /rig/lib/rig-suite.sh
snap() { # <dir>
  mkdir -p "$1"
  cat /proc/net/rpc/nfsd > "$1/rpc"
  dmesg > "$1/dmesg"
}
snap /tmp/before
rig_case_bin
rig_ready
rig_wait_client_done 120 || { rig_result fail step=client-not-done; exit 1; }
# Replies still in flight when the client exits are counted once nfsd finishes them.
sleep 0.3
snap /tmp/after
# The deltas, read by rig with wire's operation names (crates/verdict/src/nfsd_stats.rs): `rpc`,
# `proc4` (COMPOUNDs) and the session operations of `proc4ops`; it prints the number of new
# dmesg lines.
new_dmesg=$("$RIG_CASE_BIN" guest nfsd-deltas --counters nfs41 --before /tmp/before --after /tmp/after \
  --out "$RIG_OUT/$RIG_CASE.kernel.txt")
echo "== deltas"; cat "$RIG_OUT/$RIG_CASE.kernel.txt"
echo "== new dmesg lines ($new_dmesg)"; tail -n "$new_dmesg" /tmp/after/dmesg
rig_result pass kernel=$(uname -r) dmesg_new=$new_dmesg $(tr '\n' ' ' < "$RIG_OUT/$RIG_CASE.kernel.txt")
