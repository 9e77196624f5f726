# Client: soft-RoCE on eth0 and a reachable server.
set -x
rig_check modprobe modprobe rdma_rxe
rig_check rxe rdma link add rxe0 type rxe netdev eth0
rdma link show
ibv_devices
rig_check ping ping -c 2 -W 5 "$RIG_SERVER_IP"
rig_result pass rxe=rxe0 kernel=$(uname -r)
