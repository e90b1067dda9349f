#!/usr/bin/env bash
# A fleet as a user runs it (issue 35): N client-go electors at 15s/10s/2s, three per Lease
# (`lease_name = "lease-<i/3>"`), the default network, one simulated hour, `leasesim run` with
# the trace off. For each N it writes the scenario, runs it once and prints the wall time, the
# peak resident memory (GNU time's %M), the events, and both per elector: KB, and microseconds
# of wall time per simulated elector-hour (flat when the cost is linear in the fleet).
#
#   bash benches/fleet.sh target/release/leasesim 1000 3000 10000 30000 [100000]
#
# The machine's processor and vector extensions are printed first: figures taken on an
# AVX-512 host and on an AVX2-only one differ (the ChaCha8 refill takes its widest path).
# Writes only under a fresh temporary folder, removed at the end.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bash benches/fleet.sh LEASESIM_BINARY N [N ...]" >&2; exit 2; }
bin=$(realpath "$1")
shift
[ -x /usr/bin/time ] || { echo "fleet.sh needs GNU time (/usr/bin/time): apt-get install time" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
flags=$(grep -m1 '^flags' /proc/cpuinfo)
features=""
for f in avx2 avx512f; do
  case " $flags " in *" $f "*) features="$features $f" ;; esac
done
echo "machine: $model; vector extensions:${features:- none of avx2, avx512f}; $(nproc) cores"
printf '%9s %12s %9s %9s %12s %18s\n' electors events wall_s peak_MB KB/elector us/elector-hour
for n in "$@"; do
  toml="$work/fleet-$n.toml"
  {
    printf 'name = "fleet-%s"\ndescription = "%s client-go electors, three per Lease"\nduration = "1h"\nseed = 1\n\n' "$n" "$n"
    printf '[lease]\nname = "lease-0"\n\n[defaults]\nalgorithm = "client-go"\nlease_duration = "15s"\nrenew_deadline = "10s"\nretry_period = "2s"\n\n'
    awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "[[nodes]]\nidentity = \"e-%d\"\nlease_name = \"lease-%d\"\n", i, int(i / 3) }'
  } >"$toml"
  /usr/bin/time -f '%e %M' -o "$work/time" "$bin" run "$toml" --trace off --out "$work/out-$n" >/dev/null 2>"$work/err" || {
    echo "fleet.sh: the run of $n electors failed:" >&2
    cat "$work/err" >&2
    exit 1
  }
  read -r wall peak_kb <"$work/time"
  events=$(grep -o '"events_processed": *[0-9]*' "$work/out-$n/summary.json" | grep -o '[0-9]*$')
  awk -v n="$n" -v e="$events" -v w="$wall" -v k="$peak_kb" 'BEGIN {
    printf "%9d %12d %9.2f %9.0f %12.1f %18.0f\n", n, e, w, k / 1024, k / n, w * 1e6 / n }'
  rm -rf "$work/out-$n" "$toml"
done
