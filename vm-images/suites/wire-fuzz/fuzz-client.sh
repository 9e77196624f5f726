# Client: the case stream (seed WIRE_FUZZ_SEED, for WIRE_FUZZ_SECONDS) against kernel nfsd
# (--target, logs every case before its Send) and rig serve (--against), divergences deduplicated
# and looked up in the known-divergences file. Verdict pass = the run completed, the kernel
# watch did not stop it, and no divergence is left that the known-divergences file does not
# explain (new_divergences=N; `just fuzz-wire` gates on the same).
. /rig/lib/rig-suite.sh
. /rig/lib/wire-fuzz-lib.sh
report=$RIG_OUT/wire-fuzz.report.json
# Replay mode (interop fuzz-wire --replay FILE): the one case against both servers on a fresh boot,
# the first step of minimising a kernel-log finding (most are one case).
stream="--seed $WIRE_FUZZ_SEED --cases 1000000000 --time $WIRE_FUZZ_SECONDS"
[ -n "${WIRE_FUZZ_REPLAY:-}" ] && stream="--replay $WIRE_FUZZ_REPLAY --repeat $WIRE_FUZZ_REPLAY_REPEAT"
# Families left out (e.g. one that crashes this kernel), to fuzz past a known finding.
for family in ${WIRE_FUZZ_SKIP_FAMILIES:-}; do stream="$stream --skip-family $family"; done
# The kernel watch ends the run at its first hit, unless WIRE_FUZZ_KEEP_GOING=1 (a WARN leaves
# the kernel running: fuzz on for the whole time, e.g. to compare guided and unguided runs; the
# hits are still reported, but the case log's last line is then no suspect).
stop="--stop-file $WIRE_FUZZ_STOP"
[ "$WIRE_FUZZ_KEEP_GOING" = 1 ] && stop=""
# Kernel-event feedback: signatures always (the stream is unchanged), mutants only when guided.
feedback="--trace-relay $RIG_SERVER_IP:$TRACE_RELAY_PORT --signatures --corpus $RIG_OUT/corpus"
[ "$WIRE_FUZZ_GUIDED" = 1 ] && feedback="$feedback --guided"
"$RIG" fuzz-wire --target "$RIG_SERVER_IP:$NFS_RDMA_PORT" --against "$RIG_SERVER_IP:$RIG_SERVE_PORT" \
  $stream $feedback \
  --timeout-ms "$WIRE_FUZZ_TIMEOUT_MS" --report "$report" \
  --log "$RIG_OUT/wire-fuzz.case-log.jsonl" --save-divergences "$RIG_OUT/divergences" \
  --known /rig/etc/known-divergences.json $stop \
  > "$RIG_OUT/wire-fuzz.summary.txt" 2> /tmp/fuzz.err
rc=$?
# Give the server's kernel watch a moment to see what the last case did.
sleep 3
cat "$RIG_OUT/wire-fuzz.summary.txt"
cat /tmp/fuzz.err
stopped=no
[ -e "$WIRE_FUZZ_STOP" ] && [ -n "$stop" ] && stopped=yes
if [ ! -s "$report" ] || [ "$rc" -gt 1 ]; then
  rig_guest failed-result --step fuzz-wire --rc "$rc" --stderr /tmp/fuzz.err
  exit 1
fi
# The report read as rig's own type (crates/rig/src/guest.rs fuzz_verdict): fail when the kernel
# watch stopped the run or a divergence is unexplained.
watch=
[ $stopped = yes ] && watch=--stopped-by-kernel-watch
rig_guest fuzz-result --report "$report" $watch seed=$WIRE_FUZZ_SEED \
  replay=${WIRE_FUZZ_REPLAY:+yes} skipped=$(echo ${WIRE_FUZZ_SKIP_FAMILIES:-} | tr ' ' ,) \
  seconds=$WIRE_FUZZ_SECONDS guided=$WIRE_FUZZ_GUIDED
