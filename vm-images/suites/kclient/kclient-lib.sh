# Kernel NFSv3 client over RDMA against `rig serve` (sourced by the kclient client scripts).
MNT=/mnt/rig
mount_rig() {
  rig_mount_nfs_rdma "$MNT" "vers=3,proto=rdma,port=$NFS_RDMA_PORT,mountport=$MOUNT_TCP_PORT,mountproto=tcp,nolock" \
    "$RIG_SERVER_IP:/export"
}
# rdma_connects: the xprt's connect count from /proc/self/mountstats ("xprt: rdma <port>
# <bind> <connect_count> ...").
rdma_connects() {
  awk -v mnt="$MNT" '$1 == "device" { on = ($5 == mnt) } on && $1 == "xprt:" && $2 == "rdma" { print $5; exit }' /proc/self/mountstats
}
