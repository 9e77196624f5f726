# Server: soft-RoCE and our server (`rig serve`, classic DRC) with MOUNT3 over TCP on 20048 so
# the kernel client's mount.nfs needs no rpcbind (mountport= and port= are given).
. /rig/lib/rig-suite.sh
set -x
rxe_up
if serve_start classic --mount-tcp "$RIG_SERVER_IP:$MOUNT_TCP_PORT"; then
  rig_result pass policy=classic pid=$(cat /tmp/serve.pid) kernel=$(uname -r)
else
  rig_result fail step=serve-start
  exit 1
fi
