#!/usr/bin/env bash
# Builds the fuzzing harnesses (fuzz/) with clang-22 and libFuzzer, under
# AddressSanitizer and UndefinedBehaviorSanitizer, in the sanitized tree
# (build-san/, scripts/build-sanitized.sh: the one scripts/test-sanitized.sh
# runs the suite on), and runs each one from its seed corpus with its
# dictionary.
#
#   scripts/fuzz.sh [--time SECONDS] [--runs N] [--seed S] [HARNESS...]
#
# HARNESS is tgx, safetensors, tokens, dataset or ir (default: all five); --time
# bounds each harness's wall time (default 30 s), --runs its executions;
# --seed fixes libFuzzer's random seed (CI uses 1, so that its runs are
# reproducible; by default each run explores differently).
# Inputs that crash are written to fuzz/regressions/<harness>/ (commit them
# with the fix: the test suite replays that directory). New coverage goes
# to build-san/corpus/<harness>/, not to the committed seeds. The last
# lines printed are a table: harness, executions, seconds, crashes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TGC_SAN_BUILD_DIR:-$root/build-san}"
seconds=30
runs=-1
seed=0
harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; seconds=0; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    tgx|safetensors|tokens|dataset|ir) harnesses+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ ${#harnesses[@]} -eq 0 ] && harnesses=(tgx safetensors tokens dataset ir)

targets=()
for h in "${harnesses[@]}"; do targets+=("tgc-libfuzzer-$h"); done
bash "$root/scripts/build-sanitized.sh" "${targets[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1}"
summary=()
status=0
for h in "${harnesses[@]}"; do
  corpus="$build/corpus/$h"
  artifacts="$root/fuzz/regressions/$h/"
  mkdir -p "$corpus" "$artifacts"
  log="$build/fuzz-$h.log"
  before=$(ls "$artifacts" | wc -l)
  set +e
  "$build/bin/tgc-libfuzzer-$h" "$corpus" "$root/fuzz/corpus/$h" \
    -dict="$root/fuzz/dicts/$h.dict" -artifact_prefix="$artifacts" \
    -max_total_time="$seconds" -runs="$runs" -timeout=10 -rss_limit_mb=3072 \
    -max_len=65536 -seed="$seed" -print_final_stats=1 > "$log" 2>&1
  code=$?
  set -e
  after=$(ls "$artifacts" | wc -l)
  executed=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  took=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' || echo "?")
  crashes=$((after - before))
  if [ "$code" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    echo "fuzz.sh: $h failed (exit $code); the log is $log:" >&2
    tail -40 "$log" >&2
    status=1
  fi
  summary+=("$(printf '%-12s %12s %8s %8s' "$h" "$executed" "$took" "$crashes")")
done
printf '%-12s %12s %8s %8s\n' harness executions seconds crashes
printf '%s\n' "${summary[@]}"
exit $status
