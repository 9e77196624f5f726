# Client side of `reconnect`: a 16 MiB write plus non-idempotent namespace operations (create,
# rename, remove) in flight while the server drops the connection; then the data must read back
# identical, every operation must have succeeded exactly once as seen by the application, and the
# transport must show a second connect.
. /rig/lib/rig-suite.sh
. /rig/kclient/kclient-lib.sh
set -x
mount_rig
connects_before=$(rdma_connects)
dd if=/dev/urandom of=/tmp/blob bs=1024 count=16384 2>/dev/null
written=$(md5sum < /tmp/blob | cut -d' ' -f1)
mkdir -p "$MNT/churn"
touch "$RIG_SYNC/reconnect.io-started"
dd if=/tmp/blob of="$MNT/reconnect.blob" bs=64k conv=fsync 2>/tmp/dd.err &
dd_pid=$!
errors=0; ops=0; i=0
# Non-idempotent operations until the drop has happened and the write is done (bounded: 400).
while [ $i -lt 400 ]; do
  i=$((i + 1))
  echo "$i" > "$MNT/churn/c$i" || errors=$((errors + 1))
  mv "$MNT/churn/c$i" "$MNT/churn/r$i" || errors=$((errors + 1))
  rm "$MNT/churn/r$i" || errors=$((errors + 1))
  ops=$((ops + 3))
  if [ -e "$RIG_SYNC/reconnect.dropped" ] && ! kill -0 $dd_pid 2>/dev/null; then break; fi
done
wait $dd_pid; dd_rc=$?
cat /tmp/dd.err
left=$(ls "$MNT/churn" | wc -l)
connects_after=$(rdma_connects)
rig_check umount umount "$MNT"
echo 3 > /proc/sys/vm/drop_caches
mount_rig
read_back=$(md5sum < "$MNT/reconnect.blob" | cut -d' ' -f1)
rm -rf "$MNT/churn"
rig_check umount2 umount "$MNT"
dmesg | grep -i -E 'rpcrdma|xprtrdma|nfs:' | tail -20
v=pass
[ "$dd_rc" = 0 ] && [ "$written" = "$read_back" ] && [ "$errors" = 0 ] && [ "$left" = 0 ] || v=fail
[ -n "$connects_before" ] && [ -n "$connects_after" ] && [ "$connects_after" -gt "$connects_before" ] || v=fail
rig_result $v md5_written=$written md5_read=$read_back dd_rc=$dd_rc namespace_ops=$ops op_errors=$errors \
  leftover=$left connects_before=$connects_before connects_after=$connects_after
