#!/usr/bin/env bash
# Instruction-count guard: runs benches/src/bin/instruction-workload.rs under valgrind's
# callgrind (instruction counts do not depend on how busy the machine is) and compares each
# workload's count with benches/instructions-baseline.txt. Fails when one rises more than
# TOLERANCE percent (default 3) above its baseline.
#   bash benches/instructions.sh            check
#   bash benches/instructions.sh --update   record the current counts as the baseline
# The counts belong to one toolchain (rustc --version is recorded with them): after a compiler
# upgrade, check the figures by hand and --update.
set -euo pipefail
cd "$(dirname "$0")/.."
tolerance=${TOLERANCE:-3}
baseline=benches/instructions-baseline.txt
command -v valgrind >/dev/null || { echo "valgrind is not installed; skipping the instruction-count guard" >&2; exit 0; }
cargo build --release --quiet -p leasesim-benches --bin instruction-workload
bin=${CARGO_TARGET_DIR:-target}/release/instruction-workload
count() {
  local out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" >/dev/null 2>"$out"
  grep -o 'refs: *[0-9,]*' "$out" | tr -dc '0-9'
  rm -f "$out"
}
rustc_version=$(rustc --version)
if [ "${1:-}" = "--update" ]; then
  {
    echo "# instructions per workload (callgrind), $(date -u +%Y-%m-%d), $rustc_version"
    for w in flap scale scale-whole trace coordinated; do echo "$w $(count $w)"; done
  } > "$baseline"
  cat "$baseline"
  exit 0
fi
[ -f "$baseline" ] || { echo "no $baseline: run with --update first" >&2; exit 2; }
recorded_rustc=$(head -1 "$baseline" | sed 's/.*, rustc/rustc/')
if [ "$recorded_rustc" != "$rustc_version" ]; then
  echo "note: the baseline was recorded with $recorded_rustc, this is $rustc_version" >&2
fi
status=0
while read -r name want; do
  case "$name" in ''|'#'*) continue ;; esac
  got=$(count "$name")
  change=$(awk -v g="$got" -v w="$want" 'BEGIN { printf "%+.2f", (g - w) * 100 / w }')
  verdict=ok
  if awk -v g="$got" -v w="$want" -v t="$tolerance" 'BEGIN { exit !(g > w * (1 + t / 100)) }'; then
    verdict="REGRESSION (more than +$tolerance%)"
    status=1
  fi
  printf '%-11s %14s instructions, baseline %14s (%s%%) %s\n' "$name" "$got" "$want" "$change" "$verdict"
done < "$baseline"
exit $status
