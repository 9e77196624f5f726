set -x
modprobe rdma_ucm; modprobe ib_uverbs
rdma_up
ls -l /dev/infiniband
if [ "$RIG_name" = cli ]; then
  for i in $(seq 60); do ping -c 1 -W 1 "$RIG_SERVER_IP" > /dev/null && break; done
  rig_check ping ping -c 1 -W 2 "$RIG_SERVER_IP"
fi
rig_result pass kernel=$(uname -r)
