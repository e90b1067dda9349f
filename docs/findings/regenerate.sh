#!/usr/bin/env bash
# Regenerates every figure and number in docs/findings.md: runs the scenarios and sweeps it cites,
# copies the sweep plots next to this script and prints the numbers the page quotes.
#   bash docs/findings/regenerate.sh            (uses target/release/leasesim, or $LEASESIM)
set -euo pipefail
cd "$(dirname "$0")/../.."
ls=${LEASESIM:-target/release/leasesim}
[ -x "$ls" ] || cargo build --release --quiet -p sim-cli
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { "$ls" run "$1" --out "$out/$2" --trace off >/dev/null; }
sweep() {
  "$ls" sweep "scenarios/sweeps/$1.toml" --out "$out/sweep-$1" >/dev/null 2>&1
  cp "$out/sweep-$1/dual_probability.svg" "docs/findings/$1-dual-probability.svg"
  echo "## sweep $1: $2 → runs with a dual-leader window (Wilson 95 %)"
  python3 - "$out/sweep-$1/aggregate.csv" <<'PY'
import csv, sys
for row in csv.DictReader(open(sys.argv[1])):
    x = list(row.values())[1]
    print(f"  {x:>10}  {row['dual_runs']:>4}/{row['n']:<4} {float(row['dual_fraction'])*100:5.1f} %  [{float(row['dual_wilson_low'])*100:.1f}, {float(row['dual_wilson_high'])*100:.1f}]")
PY
}

sweep valid-but-unsafe "RenewDeadline of the cut-off leader"
sweep clock-rate-tolerance "the candidate's drift_ppm"
for m in mixed-fleet-matrix mixed-fleet-versions; do
  "$ls" sweep "scenarios/sweeps/$m.toml" --out "$out/sweep-$m" >/dev/null 2>&1
  cp "$out/sweep-$m/dual_probability_heatmap.svg" "docs/findings/$m.svg"
  echo "## sweep $m: leader × follower → runs with a dual-leader window"
  python3 - "$out/sweep-$m/aggregate.csv" <<'PY'
import csv, sys
for row in csv.DictReader(open(sys.argv[1])):
    keys = list(row.keys())
    print(f"  {row[keys[1]]:>20} × {row[keys[2]]:<20} {row['dual_runs']:>3}/{row['n']}  mean dual {float(row['dual_leader_seconds.mean']):.1f} s")
PY
done

"$ls" hunt scenarios/hunts/valid-but-unsafe.toml --out "$out/hunt" -q | sed 's/^/  /' || true
"$ls" run scenarios/found/rd14-partition.toml --out "$out/rd14" >/dev/null || true
cp "$out/rd14/timeline.svg" docs/findings/hunt-rd14-timeline.svg
for s in valid-but-unsafe python-hung-call; do run "scenarios/$s.toml" "$s"; done
for s in scenarios/incidents/*.toml; do n=$(basename "$s" .toml); run "$s" "$n"; done
echo "## scenarios (seed as shipped): per-Lease figures"
for d in "$out"/*/summary.json; do
  n=$(basename "$(dirname "$d")")
  case "$n" in sweep-*) continue ;; esac
  jq -r --arg n "$n" '.metrics.leases // {} | to_entries[] |
    "  \($n)  \(.key)  dual \(.value.dual_leader_seconds) s (longest \(.value.max_dual_leader_seconds) s)  leaderless \(.value.leaderless_seconds) s  transitions \(.value.lease_transitions)"' "$d"
done
