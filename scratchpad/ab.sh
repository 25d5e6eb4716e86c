#!/bin/sh
# Interleaved A/B: this tree against a copy of src at a9f764c in /tmp/core_old. Usage: ab.sh <shape> <n> <runs>
for k in $(seq 1 ${3:-5}); do
  echo "new $(WARM=${WARM:-3} npx node --expose-gc scratchpad/promisecalls.ts $1 $2)"
  echo "old $(cd /tmp/core_old && WARM=${WARM:-3} npx node --expose-gc scratchpad/promisecalls.ts $1 $2)"
done
