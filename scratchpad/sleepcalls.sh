#!/bin/sh
# 1000 tools that each sleep 10 ms, parallel, through executeToolCalls: 5 runs.
for k in 1 2 3 4 5; do WARM=${WARM:-3} npx node scratchpad/promisecalls.ts sleep ${1:-1000}; done
