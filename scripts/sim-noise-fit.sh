#!/usr/bin/env bash
# Measures the simulator's between-run spread, to fit the statistical tests' model to it
# (docs/noise.md, "The model against the simulator"): N separate processes of
# `slogate sim --noise gpu --noise-seed K --seed K` (K = 1..N), each a fresh engine start
# with its own noise draw, each measured by one run of testdata/noise/sim-fit.yaml (the
# recommended run size: 300 requests of about 64 output tokens at 10 req/s). Writes each
# run's goodput, ITL p99 and TTFT p95 to testdata/noise/sim-spread.json (or $FIT_OUT),
# prints their spread, then runs the test that compares the model's spread with it
# (go test ./gate/ -run TestNoiseModelSpread).
#
#   scripts/sim-noise-fit.sh            # N = 10, about 6 minutes
#
# Environment: FIT_RUNS (N, default 10; at least 10), FIT_LEVEL (the noise preset,
# default gpu), FIT_OUT (where the measurement goes; default testdata/noise/sim-spread.json),
# SLOGATE (a built slogate binary; default: built from this checkout).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
RUNS=${FIT_RUNS:-10}
LEVEL=${FIT_LEVEL:-gpu}
OUT=${FIT_OUT:-testdata/noise/sim-spread.json}
[[ $OUT == /* ]] || OUT=$REPO_ROOT/$OUT
((RUNS >= 10)) || { echo "sim-noise-fit: FIT_RUNS $RUNS: want at least 10" >&2; exit 2; }

log() { printf 'sim-noise-fit: %s\n' "$*" >&2; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
work=$(mktemp -d "${TMPDIR:-/tmp}/slogate-sim-noise-fit.XXXXXX")
sim_pid=""
cleanup() {
	if [[ -n $sim_pid ]] && kill -0 "$sim_pid" 2>/dev/null; then
		kill "$sim_pid" 2>/dev/null || true
		wait "$sim_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

bin=${SLOGATE:-}
if [[ -z $bin ]]; then
	bin=$work/slogate
	go build -o "$bin" ./cmd/slogate
fi
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

log "$RUNS runs of testdata/noise/sim-fit.yaml against slogate sim --noise $LEVEL (load average $(load))"
t0=$SECONDS
for ((k = 1; k <= RUNS; k++)); do
	port=$(free_port)
	"$bin" sim --profile llama-8b-h100 --noise "$LEVEL" --noise-seed "$k" --seed "$k" --addr "127.0.0.1:$port" >"$work/sim$k.log" 2>&1 &
	sim_pid=$!
	for ((i = 0; i < 100; i++)); do
		curl -fsS --max-time 1 "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
		sleep 0.1
	done
	code=0
	"$bin" run -q -c testdata/noise/sim-fit.yaml --target "http://127.0.0.1:$port" -o "$work/run$k" >"$work/run$k.log" 2>&1 || code=$?
	kill "$sim_pid"
	wait "$sim_pid" 2>/dev/null || true
	sim_pid=""
	rec=$work/run$k/sim-fit.json
	[[ -f $rec ]] || { cat "$work/run$k.log" >&2; exit 3; }
	# A run the load generator could not send on time (exit 3, client-saturated) is kept
	# and marked: its spread is this machine's, not the simulator's.
	jq -c --arg k "$k" --arg code "$code" --arg noise "$(grep -o 'speed ×[0-9.]*, drift [-+0-9.]*%' "$work/sim$k.log" || true)" \
		'{seed: ($k | tonumber), goodput: .summary.goodput_rps, itl_p99: .summary.itl_ms.p99, ttft_p95: .summary.ttft_ms.p95,
		  dispatch_lag_p99_ms: .summary.dispatch_lag_ms.p99, client_saturated: (.summary.client_saturated // false), exit: ($code | tonumber), noise: $noise}' "$rec" >>"$work/runs.jsonl"
	log "run $k: $(tail -n 1 "$work/runs.jsonl") (load average $(load))"
done
jq -s --arg level "$LEVEL" --arg load "$(load)" --arg cmd "scripts/sim-noise-fit.sh (FIT_RUNS=$RUNS FIT_LEVEL=$LEVEL)" \
	'{command: $cmd, level: $level, workload: "testdata/noise/sim-fit.yaml", profile: "llama-8b-h100", load_average_after: $load, runs: .}' \
	"$work/runs.jsonl" >"$OUT"
log "$RUNS runs in $((SECONDS - t0)) s; wrote $OUT"
# The spread: standard deviation of the log between the runs (about the coefficient of
# variation), per metric.
jq -r '.runs as $r | ["goodput", "itl_p99", "ttft_p95"][] as $m |
	($r | map(.[$m] | log)) as $x | ($x | add / length) as $mu |
	(($x | map((. - $mu) * (. - $mu)) | add) / (($x | length) - 1) | sqrt) as $sd |
	"  \($m): sd of the log \($sd * 1e4 | round / 1e4) over \($x | length) runs (mean \($mu | exp * 1e3 | round / 1e3))"' "$OUT" >&2
SLOGATE_SIM_SPREAD=$OUT go test ./gate/ -run 'TestNoiseModelSpread' -count=1 -v
