# Server: soft-RoCE on eth0; our server's export is in memory, nothing else to prepare.
. /rig/lib/rig-suite.sh
set -x
rxe_up
ldd "$RIG" | grep -q 'not found' && { ldd "$RIG"; rig_result fail step=ldd; exit 1; }
rig_result pass $RIG_TRANSPORT=$RIG_RDMA_DEV kernel=$(uname -r) rig=$("$RIG" --version | tr ' ' '_')
