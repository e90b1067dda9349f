#!/usr/bin/env bash
# The cost per event of shipped scenarios as `leasesim run` runs them, stretched so that the
# process's start and the outputs are a small part: each scenario with --no-skip (every event
# through the queue), trace off, `--set duration=DURATION` (default 200h). Prints the events
# handled, the wall time (GNU time, 10 ms steps) and µs per event. A survey, not a paired
# bench: compare two builds with farm-bench.
#   bash benches/per-event.sh BIN [DURATION] [SCENARIO.toml ...]   (default: scenarios/*.toml)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$1
duration=${2:-200h}
shift $(($# < 2 ? $# : 2))
[ $# -gt 0 ] || set -- scenarios/*.toml
for f in "$@"; do
  d=$(mktemp -d)
  /usr/bin/time -f "%e" -o "$d/time" "$bin" run "$f" --no-skip --trace off --set "duration=$duration" \
    --out "$d/out" -o json > "$d/summary.json" 2>/dev/null || true
  events=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['events_processed'])" "$d/summary.json" 2>/dev/null || echo 0)
  wall=$(tail -1 "$d/time")
  awk -v n="$(basename "$f" .toml)" -v e="$events" -v w="$wall" \
    'BEGIN { printf "%-34s %12d events %7.2f s %8.3f us/event\n", n, e, w, (e > 0 ? w * 1e6 / e : 0) }'
  rm -rf "$d"
done
