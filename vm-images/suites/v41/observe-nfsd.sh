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
rig_ready
rig_wait_client_done 120 || { rig_result fail step=client-not-done; exit 1; }
# Replies still in flight when the client exits are counted once nfsd finishes them.
sleep 0.3
snap /tmp/after
# "proc4 2 <null> <compound>" and "proc4ops <n> <op 0> <op 1> ...": field 3 + opnum is the op.
rpc4_delta() {
  awk 'NR == FNR { for (i = 2; i <= NF; i++) before[$1, i] = $i; next }
       $1 == "rpc" { printf "rpc_calls=%d\nrpc_badcalls=%d\n", $2 - before["rpc", 2], $3 - before["rpc", 3] }
       $1 == "proc4" { printf "proc4_compound=%d\n", $4 - before["proc4", 4] }
       $1 == "proc4ops" {
         split("6:create 15:lookup 24:putrootfh 28:remove 41:bind_conn_to_session 42:exchange_id 43:create_session 44:destroy_session 53:sequence 57:destroy_clientid 58:reclaim_complete", ops, " ")
         for (k in ops) { split(ops[k], p, ":"); i = 3 + p[1]; if (i <= NF) { d = $i - before["proc4ops", i]; printf "proc4ops_%s=%d\n", p[2], d } }
       }' /tmp/before/rpc /tmp/after/rpc | sort
}
new_dmesg=$(( $(wc -l < /tmp/after/dmesg) - $(wc -l < /tmp/before/dmesg) ))
[ "$new_dmesg" -lt 0 ] && new_dmesg=0
rpc4_delta > "$RIG_OUT/$RIG_CASE.kernel.txt"
echo "== deltas"; cat "$RIG_OUT/$RIG_CASE.kernel.txt"
echo "== new dmesg lines ($new_dmesg)"; tail -n "$new_dmesg" /tmp/after/dmesg
rig_result pass kernel=$(uname -r) dmesg_new=$new_dmesg $(tr '\n' ' ' < "$RIG_OUT/$RIG_CASE.kernel.txt")
