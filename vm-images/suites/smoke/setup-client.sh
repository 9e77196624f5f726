# Client: soft-RoCE on eth0 and a reachable server.
set -x
rdma_up
ibv_devices
# concurrent step: the server may still be booting; wait up to 60 s for it to answer
for i in $(seq 60); do ping -c 1 -W 1 "$RIG_SERVER_IP" > /dev/null && break; done
rig_check ping ping -c 1 -W 2 "$RIG_SERVER_IP"
rig_result pass $RIG_TRANSPORT=$RIG_RDMA_DEV kernel=$(uname -r)
