# Server side of `reconnect`: once the client's I/O is under way, SIGUSR1 makes `rig serve` drop
# every connection; xprtrdma reconnects and retransmits whatever was outstanding, and the DRC
# must answer those retransmits.
. /rig/lib/rig-suite.sh
rig_ready
rig_wait_file "$RIG_SYNC/reconnect.io-started" 120 || { rig_result fail step=io-not-started; exit 1; }
sleep 1
pid=$(cat /tmp/serve.pid)
kill -USR1 "$pid" || { rig_result fail step=sigusr1; exit 1; }
touch "$RIG_SYNC/reconnect.dropped"
rig_wait_client_done 240 || { rig_result fail step=client-not-done; exit 1; }
kill -0 "$pid" || { rig_result fail step=serve-died; exit 1; }
rig_result pass signal=USR1 pid=$pid
