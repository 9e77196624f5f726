# Client: soft-RoCE on eth0 and a reachable server (the server may still be booting).
. /rig/lib/rig-suite.sh
set -x
client_up
rig_result pass $RIG_TRANSPORT=$RIG_RDMA_DEV kernel=$(uname -r)
