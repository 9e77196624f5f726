# Guest driver: runs the host-written plan (/rig/plan, one step per line, TAB-separated:
#   <name> <timeout-seconds> <server-script|-> <client-script|-> <sync|concurrent>
# ) in order on both guests, in lock step through marker files in /rig/out/sync:
#   server: runs its script (which may call rig_ready early), then marks <name>.srv.ready,
#           then waits for <name>.cli.done before the next step;
#   client: waits for <name>.srv.ready (unless the step is concurrent, or the server has no
#           script in it and the step before was not concurrent), runs its script, marks
#           <name>.cli.done.
# A client-only step does not wait for the server: the server has nothing to do in it, and its
# next step with a script still waits for every earlier <name>.cli.done, so it cannot run ahead
# of the client; the client just no longer waits one poll interval per step for the server.
# Except after a concurrent step (setup): nothing there told the client that the server's
# script finished (nfsd listening), so the client waits as before.
# Writes STEP lines to /rig/out/steps.<role> and dmesg to /rig/out/<role>.dmesg at the end.
. /rig/lib.sh
ROLE=$RIG_name
mkdir -p "$RIG_SYNC"
rig_log "driver start"
TAB=$(printf '\t')
# Every program this loop execs costs 30-100 ms of a guest's TCG CPU per case and role: the
# clock and the markers use builtins, and the dmesg slice is written where it is kept.
run_script() { # <name> <timeout> <script>
  rig_clock; t0=$RIG_CLOCK_CS
  # The kernel log lines this case caused: its dmesg slice, <case>.<role>.dmesg (kept only when
  # the kernel said something), so a WARN names the case that triggered it.
  k0=$(dmesg 2>/dev/null | wc -l)
  RIG_CASE=$1 timeout -s KILL "$2" sh -c ". /rig/lib.sh; . /rig/$3" \
    > "$RIG_OUT/$1.$ROLE.log" 2>&1 < /dev/null
  rc=$?
  rig_clock
  echo "STEP case=$1 role=$ROLE rc=$rc ms=$(( (RIG_CLOCK_CS - t0) * 10 ))" >> "$RIG_OUT/steps.$ROLE"
  # Written in /tmp and copied only when the kernel said something (an exec only then).
  dmesg 2>/dev/null | tail -n +"$((k0 + 1))" > /tmp/step.dmesg
  [ -s /tmp/step.dmesg ] && cp /tmp/step.dmesg "$RIG_OUT/$1.$ROLE.dmesg"
}
previous_mode=
while IFS="$TAB" read -r name tmo srv cli mode; do
  [ -n "$name" ] || continue
  export RIG_CASE=$name
  rig_log "step $name"
  if [ "$ROLE" = srv ]; then
    [ "$srv" != - ] && run_script "$name" "$tmo" "$srv"
    : > "$RIG_SYNC/$name.srv.ready"
    rig_wait_file "$RIG_SYNC/$name.cli.done" "$tmo" || rig_log "client did not finish $name"
  else
    if [ "$mode" = concurrent ] || { [ "$srv" = - ] && [ "$previous_mode" != concurrent ]; } ||
      rig_wait_file "$RIG_SYNC/$name.srv.ready" "$tmo"; then
      [ "$cli" != - ] && run_script "$name" "$tmo" "$cli"
    else
      rig_log "server not ready for $name"
      echo "STEP case=$name role=$ROLE rc=server-not-ready ms=0" >> "$RIG_OUT/steps.$ROLE"
    fi
    : > "$RIG_SYNC/$name.cli.done"
  fi
  previous_mode=$mode
done < /rig/plan
# A suite-wide capture (rig-suite.sh capture_start): let tcpdump drain what it has not written
# yet, stop it, and hand the file to the host, which cuts it per case. libpcap hands packets over
# a TPACKET_V3 block at a time, and a block that is not full is retired only by its 1 s timer:
# the file must stay the same size for longer than that (checked every 1.2 s, at most 5 times),
# or the last case loses its tail (a one-case run lost its retransmit and disconnect).
if pid=$(cat /tmp/suite-capture.pid 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
  last=-1; i=0
  while [ "$i" -lt 5 ]; do
    size=$(stat -c %s /tmp/suite.pcap 2>/dev/null || echo 0)
    [ "$size" = "$last" ] && break
    last=$size; i=$((i + 1)); sleep 1.2
  done
  kill -INT "$pid" 2>/dev/null
  for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  cp /tmp/suite.pcap "$RIG_OUT/$ROLE.suite.pcap" 2>/dev/null
fi
dmesg > "$RIG_OUT/$ROLE.dmesg" 2>&1
rig_log "driver end"
