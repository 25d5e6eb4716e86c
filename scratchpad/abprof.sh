#!/bin/sh
# Alternates scratchpad/turnprof.ts on this tree and on a copy of main in $MAIN (default /tmp/agentperf-main):
# sh scratchpad/abprof.sh <workload> [rounds] [seconds]
MAIN=${MAIN:-/tmp/agentperf-main}
for i in $(seq ${2:-3}); do
  (cd "$MAIN" && npx node --expose-gc scratchpad/turnprof.ts $1 ours ${3:-3} | sed 's/^/main /' | grep -v events)
  npx node --expose-gc scratchpad/turnprof.ts $1 ours ${3:-3} | sed 's/^/this /' | grep -v events
done
