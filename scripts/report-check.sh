#!/usr/bin/env bash
# The HTML report as a browser shows it: runs `slogate demo --regress` (the simulated
# engine, no GPU), re-renders its files with `slogate report` (which must give the same
# bytes), opens report.html in headless Chromium (Debian's package, installed if absent)
# for a DOM dump and a screenshot, and fails when the verdict table is missing or any
# chart is empty (scripts/reportcheck). Then it does the same for the report of a
# multi-turn session workload run against the simulator, whose TTFT-by-turn and
# TTFT-by-history charts must be drawn.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

log() { printf 'report-check: %s\n' "$*" >&2; }

chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $chromium ]]; then
	log "installing Debian's chromium"
	sudo_=""
	[[ $(id -u) -ne 0 ]] && sudo_=sudo
	$sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-liberation >/dev/null ||
		{ $sudo_ apt-get update >/dev/null && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-liberation >/dev/null; }
	chromium=$(command -v chromium)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/slogate" ./cmd/slogate
out="$work/out"
# The regressed demo fails its gate (exit 1), or is refused on a machine too loaded to
# keep the schedule (exit 3): either way it writes the report, which is what is checked.
rc=0
"$work/slogate" demo --regress --quiet -o "$out" >"$work/demo.log" 2>&1 || rc=$?
log "slogate demo --regress: exit $rc"
if [[ $rc -ne 1 && $rc -ne 3 ]]; then
	cat "$work/demo.log" >&2
	log "FAIL: want exit 1 (regressed) or 3 (refused), got $rc"
	exit 1
fi
for f in report.html comment.md gate.json report-meta.json; do
	[[ -s $out/$f ]] || { log "FAIL: $out/$f missing"; exit 1; }
done

# slogate report renders the same bytes from the files alone.
"$work/slogate" report -r "$out" --baselines baselines --markdown "$work/again.md" --html "$work/again.html"
cmp "$out/comment.md" "$work/again.md" && cmp "$out/report.html" "$work/again.html" ||
	{ log "FAIL: slogate report differs from what demo wrote"; exit 1; }

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
	--disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$work/profile")

# browse PAGE NAME [CHART-TITLE ...]: the DOM and a screenshot of PAGE as Chromium shows
# it, checked by scripts/reportcheck (every chart drawn or said why, the titles given drawn).
browse() {
	local page=$1 name=$2
	shift 2
	timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$page" >"$work/$name.dom.html" 2>"$work/chromium.log" ||
		{ cat "$work/chromium.log" >&2; log "FAIL: chromium --dump-dom ($name)"; exit 1; }
	rm -rf "$work/profile"
	timeout 120 "$chromium" "${flags[@]}" --window-size=1280,2400 --screenshot="$work/$name.png" "file://$page" 2>>"$work/chromium.log" >/dev/null ||
		{ cat "$work/chromium.log" >&2; log "FAIL: chromium --screenshot ($name)"; exit 1; }
	rm -rf "$work/profile"
	[[ -n ${REPORT_CHECK_KEEP:-} ]] && cp "$work/$name.png" "$work/$name.dom.html" "$REPORT_CHECK_KEEP/"
	go run ./scripts/reportcheck "$work/$name.dom.html" "$work/$name.png" "$@"
}

[[ -n ${REPORT_CHECK_KEEP:-} ]] && cp "$out/report.html" "$out/comment.md" "$REPORT_CHECK_KEEP/"
browse "$out/report.html" demo

# A multi-turn session workload against the simulator: its report must draw TTFT against
# turn and against history length. The run is its own baseline (the verdict is beside
# the point here); the client is held loosely so that a loaded machine is not refused.
sess="$work/sessions"
mkdir -p "$sess/out"
cat >"$sess/slogate.yaml" <<'YAML'
version: 1
target: {api: chat}
model: {name: sim-tiny}
workloads:
  - name: sessions
    seed: 3
    arrival: {process: poisson, rate: 6}
    sessions:
      count: 12
      turns: {dist: uniform, min: 3, max: 6}
      user_tokens: {dist: uniform, min: 40, max: 120}
      output_tokens: {dist: uniform, min: 8, max: 24}
      think_time: {dist: exponential, mean: 100ms}
      system_prompt_tokens: 60
    timeout: 30s
    max_dispatch_lag: 30s
    slo: {ttft: {p95: 10s}}
gate:
  baselines: baselines
  rules:
    goodput: {direction: higher, tolerance: 50%}
    error_rate: {max: 5%}
YAML
addr=127.0.0.1:18797
"$work/slogate" sim --addr "$addr" --seed 1 >"$sess/sim.log" 2>&1 &
simpid=$!
trap 'kill $simpid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do curl -fsS "http://$addr/v1/models" >/dev/null 2>&1 && break; sleep 0.2; done
"$work/slogate" run -q -c "$sess/slogate.yaml" --target "http://$addr" -o "$sess/out" >"$sess/run.log" 2>&1 ||
	{ cat "$sess/run.log" >&2; log "FAIL: slogate run of the session workload"; exit 1; }
"$work/slogate" baseline update -c "$sess/slogate.yaml" -r "$sess/out" >/dev/null
rc=0
"$work/slogate" gate -c "$sess/slogate.yaml" -r "$sess/out" --json "$sess/out/gate.json" >"$sess/gate.log" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$sess/gate.log" >&2; log "FAIL: gate of the session run against itself: exit $rc"; exit 1; }
"$work/slogate" report -r "$sess/out" --html "$sess/report.html"
browse "$sess/report.html" sessions "TTFT by turn" "TTFT by history length"
log "ok"
