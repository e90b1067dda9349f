#!/usr/bin/env bash
# The output corpus a speed change must leave byte-identical: every shipped scenario (with the
# incidents and the hunts' found schedules) at three seeds with the trace on and once with it
# off, the flap family at every drift of its sweep, and the shipped sweeps plus a slice of the
# flap sweep. Writes every output under OUT and a list of their hashes to OUT/hashes.txt.
#
#   bash benches/corpus.sh target/release/leasesim /tmp/corpus-new
#   diff /tmp/corpus-old/hashes.txt /tmp/corpus-new/hashes.txt   # nothing: byte-identical
#
# Two binaries are compared by running it once with each; any line of the diff names the file
# that moved. It takes about a minute on two cores.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bash benches/corpus.sh LEASESIM_BINARY OUT_DIR" >&2; exit 2; }
bin=$(realpath "$1")
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
# OUT is replaced only if it is a corpus this script wrote (it holds hashes.txt) or empty.
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ] && [ ! -f "$out/hashes.txt" ]; then
  echo "corpus.sh: $out exists and is not a corpus (no hashes.txt): choose a new folder" >&2
  exit 2
fi
rm -rf "$out"
mkdir -p "$out/run" "$out/sweep"
cd "$root"
scenarios=$(ls scenarios/*.toml scenarios/incidents/*.toml scenarios/found/*.toml)
for s in $scenarios; do
  name=$(basename "$s" .toml)
  dir=$(basename "$(dirname "$s")")
  for seed in 1 2 3; do
    "$bin" run "$s" --seed "$seed" --trace on --format both --out "$out/run/$dir-$name-$seed" -o json \
      >"$out/run/$dir-$name-$seed.stdout" 2>&1 || true
  done
  "$bin" run "$s" --seed 7 --trace off --out "$out/run/$dir-$name-off" -o json >"$out/run/$dir-$name-off.stdout" 2>&1 || true
done
for d in 0 1000 10000 100000 300000; do
  for seed in 1 2; do
    "$bin" run benches/flap/flap.toml --seed "$seed" --trace on --set "defaults.clock.drift_ppm_dist={uniform=[-$d,$d]}" \
      --out "$out/run/flap-$d-$seed" -o json >"$out/run/flap-$d-$seed.stdout" 2>&1 || true
  done
done
for s in scenarios/sweeps/*.toml; do
  name=$(basename "$s" .toml)
  "$bin" sweep "$s" --jobs 2 --seeds 1..=4 --out "$out/sweep/$name" -q >"$out/sweep/$name.stdout" 2>&1 || true
done
"$bin" sweep benches/flap/flap-sweep.toml --jobs 2 --seeds 1..=20 --out "$out/sweep/flap" -q >"$out/sweep/flap.stdout" 2>&1 || true
# The stdout of a run names its output folder, which differs between corpora: hash it relative.
(cd "$out" && find . -type f ! -name hashes.txt -print0 | sort -z | while IFS= read -r -d '' f; do
  printf '%s  %s\n' "$(sed -e "s#$out#OUT#g" -e "s#$bin#BIN#g" "$f" | sha256sum | cut -c1-16)" "$f"
done) >"$out/hashes.txt"
echo "$(wc -l <"$out/hashes.txt") files hashed into $out/hashes.txt"
