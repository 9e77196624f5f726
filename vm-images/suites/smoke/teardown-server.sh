# Stop the capture and copy it out; report what nfsd saw.
kill -INT "$(cat /tmp/tcpdump.pid)"
for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$(cat /tmp/tcpdump.pid)" 2>/dev/null || break; sleep 0.3; done
cat /tmp/tcpdump.err
cp /tmp/srv.pcap "$RIG_OUT/srv.pcap"
grep -E '^(rpc|proc3|proc4)' /proc/net/rpc/nfsd
bytes=$(stat -c %s "$RIG_OUT/srv.pcap")
if [ "$bytes" -gt 24 ]; then rig_result pass pcap_bytes=$bytes; else rig_result fail pcap_bytes=$bytes; fi
