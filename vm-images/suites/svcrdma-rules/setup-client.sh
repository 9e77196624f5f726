# Client: soft-RoCE on eth0 and a reachable server (the server may still be booting).
. /rig/lib/rig-suite.sh
set -x
rxe_up
for i in $(seq 60); do ping -c 1 -W 1 "$RIG_SERVER_IP" > /dev/null && break; done
rig_check ping ping -c 1 -W 2 "$RIG_SERVER_IP"
rig_result pass rxe=rxe0 kernel=$(uname -r)
