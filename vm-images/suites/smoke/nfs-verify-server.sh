# Server side of an NFS case: after the client finished, checksum the file it wrote, from the
# exported tmpfs (independent of the client's view).
rig_ready
rig_wait_client_done 150 || { rig_result fail step=client-not-done; exit 1; }
f=/export/$RIG_CASE.blob
[ -f "$f" ] || { rig_result fail step=no-file; exit 1; }
rig_result pass bytes=$(stat -c %s "$f") md5_server=$(md5sum < "$f" | cut -d' ' -f1)
