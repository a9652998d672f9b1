#!/usr/bin/env bash
# The end-to-end suite: the README's scenarios and the promises of earlier changes, at full
# size, run as a user runs them: the built binary in a temporary directory, against the
# simulator (`slogate sim`, each scenario its own on a free loopback port), a fake GitHub
# API (testdata/action/fakegh) and, where it is built, llama.cpp's llama-server. Each
# scenario checks exit codes exactly, the files the documentation names, and fields of the
# records and of gate.json (with jq). A failing scenario does not stop the others: the run
# prints PASS or FAIL and the time of each, a summary, and exits 1 if any failed.
#
#   scripts/e2e.sh                      # every scenario
#   scripts/e2e.sh demo ci_pull_request # only these (the name without scenario_)
#   scripts/e2e.sh -l                   # list the scenarios
#
# Scenarios: demo (and --regress, and report from the files), baseline_gate, ci_pull_request
# (one sticky comment, then the same one updated), fork_pull_request (refused; allowed
# with a read-only token), sweep_capacity, sweep_declared_slo (a sweep judges each step by
# the SLO as declared), cold_under_kv_pressure (a fresh engine's first cold run is judged
# though it preempts), shards_merge, import_export, ab, calibrate, tasks (task goodput
# and the cost per completed task), llamacpp (with llamacpp_ab's jobs; skipped,
# loudly, when llama-server is not built: scripts/llamacpp-test.sh builds it first in
# .ci/run). On a 2-core machine the whole suite took 286 s in three lanes, the llamacpp
# scenario (with its three A/B jobs) 236 s of it; 221 s before those jobs (641 s one at
# a time).
#
# Needs Go, bash, jq (Debian's package, installed if absent), coreutils and git.
# Environment: SLOGATE_E2E_BIN (a slogate binary to test instead of building this
# checkout's), SLOGATE_E2E_KEEP=1 (keep the work directory for a post-mortem),
# SLOGATE_CACHE and SLOGATE_MODEL (as scripts/llamacpp.sh reads them),
# SLOGATE_E2E_LLAMACPP_AB_FLAGS (the llama.cpp A/B jobs' stopping flags instead of
# --futility-from 8 --final-share 0.5) and SLOGATE_E2E_LLAMACPP_AB_MAX (their most
# blocks instead of 16), for measurements.
set -uo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT" || exit 1
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
T0=$SECONDS

log() { printf 'e2e: %s\n' "$*" >&2; }

ALL_SCENARIOS=(demo baseline_gate ci_pull_request fork_pull_request sweep_capacity sweep_declared_slo
	cold_under_kv_pressure shards_merge import_export ab calibrate tasks llamacpp)

if [[ ${1-} == -l ]]; then
	printf '%s\n' "${ALL_SCENARIOS[@]}"
	exit 0
fi
scenarios=("$@")
((${#scenarios[@]})) || scenarios=("${ALL_SCENARIOS[@]}")
if ! command -v jq >/dev/null; then
	log "installing Debian's jq"
	sudo_=""
	[[ $(id -u) -ne 0 ]] && sudo_=sudo
	$sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends jq >/dev/null ||
		{ $sudo_ apt-get update >/dev/null && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends jq >/dev/null; } ||
		{ log "FAIL: jq is needed and could not be installed"; exit 1; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/slogate-e2e.XXXXXX")
declare -A name_of
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_pids "${!name_of[@]}"
	if [[ -n ${SLOGATE_E2E_KEEP-} ]]; then
		log "work directory kept: $work"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM


# ---------------------------------------------------------------------------------------
# Helpers. They run inside a scenario's subshell: `fails` counts its failed checks, and
# every process a scenario starts is in `pids`, stopped when the subshell exits.

fails=0
pids=()
d="" # the scenario's own directory

pass() { printf '  ok    %s\n' "$*"; }
fail() {
	printf '  FAIL  %s\n' "$*"
	fails=$((fails + 1))
}
# need DESCRIPTION: a failed precondition; the scenario stops there.
need() {
	fail "$*"
	exit 1
}

# stop_pids PID...: TERM each process, then wait for each.
stop_pids() {
	local p
	for p in "$@"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "$@"; do
		wait "$p" 2>/dev/null
	done
}

stop_all() {
	stop_pids "${pids[@]}"
	pids=()
}

# serve NAME COMMAND...: starts a server that logs "... on http://ADDR" (slogate sim,
# serialsim, fakegh) with its log in $d/NAME.log, waits for that line and sets $url.
serve() {
	local name=$1
	shift
	"$@" >"$d/$name.log" 2>&1 &
	pids+=($!)
	local i
	url=""
	for ((i = 0; i < 300; i++)); do
		url=$(sed -n 's/.* on \(http:\/\/[0-9.:]*\).*/\1/p' "$d/$name.log" | head -n 1)
		[[ -n $url ]] && return 0
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	cat "$d/$name.log"
	need "$name did not start"
}

# sim NAME [FLAGS...]: a fresh `slogate sim` on a free port; sets $url.
sim() {
	local name=$1
	shift
	serve "$name" "$SLOGATE" sim --addr 127.0.0.1:0 --seed 1 "$@"
}

# expect WANT NAME COMMAND...: runs COMMAND with its output in $d/NAME.log; a check that
# the exit code is exactly WANT (the log's end printed when it is not). Returns the
# comparison's result, so that a scenario can stop on it: `expect 0 run ... || exit 1`.
expect() {
	local want=$1 name=$2 rc=0
	shift 2
	"$@" >"$d/$name.log" 2>&1 || rc=$?
	if ((rc == want)); then
		pass "$name: exit $rc"
		return 0
	fi
	fail "$name: exit $rc, want $want ($*)"
	tail -n 25 "$d/$name.log" | sed 's/^/        | /'
	return 1
}

# expect_0or4 NAME DESCRIPTION FILE FILTER COMMAND...: a check that COMMAND (its output
# in $d/NAME.log) exits 0 or 4, an engine's noise left free to leave a rule undecided,
# and then that FILTER is true of FILE with exit 4 exactly when its verdict is
# inconclusive. Returns 0 when the exit was 0 or 4.
expect_0or4() {
	local name=$1 desc=$2 file=$3 filter=$4 rc=0
	shift 4
	"$@" >"$d/$name.log" 2>&1 || rc=$?
	if ((rc != 0 && rc != 4)); then
		fail "$name: exit $rc, want 0 or 4 ($*)"
		tail -n 25 "$d/$name.log" | sed 's/^/        | /'
		return 1
	fi
	pass "$name: exit $rc"
	jqc "$desc; exit 4 exactly when inconclusive" "$file" "($filter) and ((.verdict == \"inconclusive\") == ($rc == 4))"
	return 0
}

# jqc DESCRIPTION FILE FILTER [jq args...]: a check that FILTER is true of FILE; on
# failure prints what the filter's inputs were.
jqc() {
	local desc=$1 file=$2 filter=$3
	shift 3
	if [[ ! -s $file ]]; then
		fail "$desc: $file missing or empty"
		return 1
	fi
	if jq -e "$@" "$filter" "$file" >/dev/null 2>"$d/jq.err"; then
		pass "$desc"
		return 0
	fi
	fail "$desc ($(basename "$file"): $filter $(cat "$d/jq.err"))"
	return 1
}

# files DIR NAME...: a check that each named file exists and is not empty.
files() {
	local dir=$1 f missing=()
	shift
	for f in "$@"; do
		[[ -s $dir/$f ]] || missing+=("$f")
	done
	if ((${#missing[@]})); then
		fail "files in $(basename "$dir")/: missing ${missing[*]}"
		return 1
	fi
	pass "files in $(basename "$dir")/: $*"
}

# grepc DESCRIPTION FILE PATTERN: a check that FILE has a line matching PATTERN (ERE).
grepc() {
	if grep -Eq -- "$3" "$2" 2>/dev/null; then
		pass "$1"
		return 0
	fi
	fail "$1 (no /$3/ in $(basename "$2"))"
	return 1
}

# output FILE KEY: the value of step output KEY in a GITHUB_OUTPUT file (KEY<<DELIM form),
# the last one set: ci sets its outputs once the files are written and again after
# publishing (comment-url).
output() {
	awk -v k="$2" 'index($0, k "<<") == 1 { getline; v = $0 } END { print v }' "$1"
}

# ghstat STATE KEY: a fact about the fake GitHub's calls (fakegh stats).
ghstat() { "$bin/fakegh" stats -state "$1" | sed -n "s/^$2=//p"; }

# A chat workload on the simulator's llama-8b-h100 profile (steps of 6 ms and up, so the
# machine's own jitter is small beside them): the gate scenarios' config. The dispatch-lag
# bound is loose because CI machines are shared; these scenarios check what the tool
# reports and decides, the load generator's precision has its own tests.
gate_config() { # NAME REQUESTS [extra workload lines]
	cat <<YAML
version: 1
target: {api: chat, engine: auto}
model: {name: meta-llama/Llama-3.1-8B-Instruct}
workloads:
  - name: $1
    seed: 7
    requests: $2
    warmup: {requests: 4}
    arrival: {process: poisson, rate: 20}
    prompt_tokens: {dist: lognormal, p50: 200, p95: 600, max: 1000}
    output_tokens: {dist: lognormal, p50: 32, p95: 64, max: 96}
    timeout: 30s
    max_dispatch_lag: 200ms
    slo: {ttft: {p95: 2s}, itl: {p99: 500ms}}
${3-}
gate:
  baselines: baselines
  rules:
    goodput: {direction: higher, tolerance: 10%}
    itl_p99: {direction: lower, tolerance: 50%}
    kv_concurrency: {direction: higher, tolerance: 1%}
    error_rate: {max: 1%}
YAML
}

# ---------------------------------------------------------------------------------------
# Scenarios. Each runs in its own subshell, in its own directory $d.

# demo NAME WANT ARGS...: `slogate demo ARGS -o NAME`, which must exit WANT; or 3 with the
# refusal docs/metrics.md documents when the machine is too busy to keep the schedule (the
# record client-saturated, gate.json verdict error with the reason): the demo's
# dispatch-lag bound is 5 ms, which a shared CI machine can miss. Returns 0 when the run
# was judged, 2 when it was refused as documented (its verdict checks are then moot).
demo() {
	local name=$1 want=$2 rc=0
	shift 2
	"$SLOGATE" demo --quiet -o "$name" "$@" >"$name.log" 2>&1 || rc=$?
	if ((rc == want)); then
		pass "demo${*:+ $*}: exit $rc"
		return 0
	fi
	if ((rc == 3)) && jq -e '.summary.client_saturated == true' "$name/chat-demo.json" >/dev/null 2>&1 &&
		jq -e '.verdict == "error" and (.workloads[0].reason | test("load generator was saturated"))' "$name/gate.json" >/dev/null 2>&1; then
		pass "demo${*:+ $*}: exit 3, refused as documented: this machine could not keep the schedule ($(grep -o 'dispatch lag p99 [0-9.]* ms > [0-9]* *ms' "$name.log" | head -n 1)); its verdict is not checked"
		return 2
	fi
	fail "demo${*:+ $*}: exit $rc, want $want"
	tail -n 25 "$name.log" | sed 's/^/        | /'
	return 1
}

# The README's quick start: `slogate demo` passes against the committed baseline and writes
# the files it names; `--regress` fails on ITL p99 and KV-limited concurrency while
# goodput does not fail, as the README's printed table shows; `slogate report` renders the
# regressed run's comment and HTML report byte for byte from the files alone. The demo
# runs from an empty directory: the binary carries its workload and baseline. Its report
# is rendered from the checkout, where the demo's config (cli/demo.yaml, named in
# report-meta.json, whose capacity section gives the comment its fleet section) and
# baselines are.
scenario_demo() {
	cd "$d" || exit 1
	local rc=0
	demo pass 0 || rc=$?
	((rc == 1)) && exit 1
	files pass chat-demo.json gate.json comment.md report.html report-meta.json slogate-manifest.json
	if ((rc == 0)); then
		# A pass; warn where the environment drifted (another kernel than the baseline's).
		jqc "demo: gate.json verdict pass" pass/gate.json '.schema == "slogate.gate/v1" and (.verdict == "pass" or .verdict == "warn")'
		jqc "demo: every rule of chat-demo passes" pass/gate.json \
			'[.workloads[] | select(.name == "chat-demo") | .metrics[] | .verdict] | length >= 4 and all(. == "pass" or . == "improved" or . == "warn")'
	fi
	jqc "demo: the record holds 8 req/s Poisson for 45 s and no errors" pass/chat-demo.json \
		'.schema == "slogate.run/v1" and .summary.requests > 300 and .summary.error_rate == 0'

	rc=0
	demo regress 1 --regress || rc=$?
	((rc == 1)) && exit 1
	files regress chat-demo.json gate.json comment.md report.html report-meta.json
	if ((rc == 0)); then
		jqc "demo --regress: verdict fail" regress/gate.json '.verdict == "fail"'
		jqc "demo --regress: itl_p99 fails" regress/gate.json '.workloads[0].metrics[] | select(.metric == "itl_p99") | .verdict == "fail"'
		# Below capacity the regressed engine still serves almost every request within its
		# SLO (ratio 0.98 [0.96, 0.99] with two busy loops beside it); beside other jobs its slower
		# steps miss a few more, and the 5% rule may be left undecided, never failed.
		jqc "demo --regress: goodput does not fail (below capacity, the drain is not counted)" regress/gate.json \
			'.workloads[0].metrics[] | select(.metric == "goodput") | .verdict == "pass" or .verdict == "warn" or .verdict == "inconclusive"' ||
			jq -c '.workloads[0].metrics[] | select(.metric == "goodput")' regress/gate.json | sed 's/^/        | /'
		grepc "demo --regress: the comment says fail" regress/comment.md 'slogate: \*\*fail\*\*'
		jqc "demo --regress: kv_concurrency fails, 120 -> 90" regress/gate.json \
			'.workloads[0].metrics[] | select(.metric == "kv_concurrency") | .verdict == "fail" and .baseline == 120 and .candidate == 90'
	fi
	# Judged or refused, the record says what the engine was.
	jqc "demo --regress: KV-limited concurrency 90 in the record" regress/chat-demo.json '.summary.kv_concurrency.value == 90'
	jqc "demo --regress: the engine version change is expected drift" regress/gate.json \
		'.workloads[0].drift[] | select(.field == "engine.version") | .policy == "expected" and .status == "changed"'
	# The regressed run is rendered again from its files alone.
	if expect 0 report bash -c 'cd "$1" && "$2" report -r "$3/regress" --baselines baselines --markdown "$3/again.md" --html "$3/again.html"' _ "$REPO_ROOT" "$SLOGATE" "$d"; then
		if cmp -s regress/comment.md again.md && cmp -s regress/report.html again.html; then
			pass "report: comment.md and report.html byte for byte what demo wrote"
		else
			fail "report: slogate report differs from what demo wrote"
		fi
	fi
}

# Baseline then gate (the README's Commands): run, `baseline update` writes
# baselines/<workload>/sim.json, an unchanged engine passes the gate (exit 0, gate.json),
# the same engine four times slower fails it on ITL p99 (exit 1), and a changed workload is
# incomparable (exit 1), never a silent pass.
scenario_baseline_gate() {
	cd "$d" || exit 1
	gate_config chat 200 >slogate.yaml
	sim engine --profile llama-8b-h100
	expect 0 run-base "$SLOGATE" run -q -c slogate.yaml --target "$url" -o base || exit 1
	files base chat.json slogate-manifest.json chat.journal.jsonl
	expect 0 baseline-update "$SLOGATE" baseline update -c slogate.yaml -r base || exit 1
	files baselines/chat sim.json sim.history.jsonl
	jqc "baseline: one trial with its 200 requests kept" baselines/chat/sim.json \
		'.schema == "slogate.baseline/v1" and .hardware == "sim" and (.trials | length) == 1 and .trials[0].requests.n == 200 and (.trials[0].requests.ttft_us | length) == 200'
	grepc "baseline update prints the file written" baseline-update.log 'baselines/chat/sim\.json'

	expect 0 run-same "$SLOGATE" run -q -c slogate.yaml --target "$url" -o same || exit 1
	if expect 0 gate-same "$SLOGATE" gate -c slogate.yaml -r same --json same/gate.json; then
		jqc "gate: unchanged engine passes" same/gate.json '.verdict == "pass" or .verdict == "improved" or .verdict == "warn"'
		jqc "gate: bootstrap of 2000 resamples, 95%" same/gate.json '.resamples >= 2000 and .confidence == 0.95'
		jqc "gate: every rule compared" same/gate.json '[.workloads[0].metrics[].metric] | contains(["goodput", "itl_p99", "kv_concurrency", "error_rate"])'
	fi
	stop_all

	sim slow --profile llama-8b-h100 --slowdown 4 --version 0.0.0-slogate-sim+slow
	expect 0 run-slow "$SLOGATE" run -q -c slogate.yaml --target "$url" -o slow || exit 1
	if expect 1 gate-slow "$SLOGATE" gate -c slogate.yaml -r slow --json slow/gate.json; then
		jqc "gate: 4x slower engine fails on itl_p99" slow/gate.json '.verdict == "fail" and (.workloads[0].metrics[] | select(.metric == "itl_p99") | .verdict == "fail" and .lo > 1.5)'
		jqc "gate: the version change is reported as drift" slow/gate.json '.workloads[0].drift[] | select(.field == "engine.version") | .status == "changed"'
		grepc "gate: prints FAIL" gate-slow.log 'FAIL'
	fi

	# A changed workload (another seed) is incomparable with the baseline: exit 1.
	sed 's/seed: 7/seed: 8/' slogate.yaml >changed.yaml
	expect 0 run-changed "$SLOGATE" run -q -c changed.yaml --target "$url" -o changed || exit 1
	if expect 1 gate-changed "$SLOGATE" gate -c changed.yaml -r changed --json changed/gate.json; then
		jqc "gate: a changed workload is incomparable" changed/gate.json '.verdict == "incomparable"'
	fi
}

# ci_env DIR EVENT API_URL TARGET N: the environment the runner gives `slogate ci` on a pull
# request (the names action.yml passes), for env(1); N numbers its output and summary files.
ci_env() {
	local dir=$1 event=$2 api=$3 target=$4 n=$5
	printf '%s\n' \
		"INPUT_CONFIG=slogate.yaml" "INPUT_MODE=gate" "INPUT_TARGET=$target" "INPUT_GITHUB-TOKEN=e2e-token" \
		"INPUT_WORKING-DIRECTORY=$dir" "INPUT_FAIL-ON=fail" "INPUT_COMMENT=always" \
		"GITHUB_API_URL=$api" "GITHUB_REPOSITORY=acme/serving" "GITHUB_EVENT_NAME=pull_request" \
		"GITHUB_EVENT_PATH=$event" "GITHUB_REF=refs/pull/7/merge" "GITHUB_SHA=1111111111111111111111111111111111111111" \
		"GITHUB_OUTPUT=$d/outputs.$n" "GITHUB_STEP_SUMMARY=$d/summary.$n" \
		"GITHUB_SERVER_URL=https://github.com" "GITHUB_RUN_ID=4242" "GITHUB_ACTOR=octocat"
}

# repo_with_baseline: a git repository in $d/repo whose committed baseline was made
# against the engine at $url, as a team's repository holds it.
repo_with_baseline() {
	mkdir -p "$d/repo" && cd "$d/repo" || exit 1
	gate_config chat 150 >slogate.yaml
	git init -q . && git -c user.name=e2e -c user.email=e2e@example.com commit -q --allow-empty -m init || need "git init"
	expect 0 run-base "$SLOGATE" run -q -c slogate.yaml --target "$url" -o "$d/base" || exit 1
	expect 0 baseline-update "$SLOGATE" baseline update -c slogate.yaml -r "$d/base" || exit 1
	git add slogate.yaml baselines && git -c user.name=e2e -c user.email=e2e@example.com commit -q -m baseline || need "git commit"
	cd "$d" || exit 1
}

# A pull request's gate with the Action's entry point (`slogate ci`, as action.yml runs
# it): the files and the job summary, one sticky comment on the fake GitHub, then a second
# run on the same pull request updates that comment in place (one comment, two versions).
scenario_ci_pull_request() {
	cd "$d" || exit 1
	sim engine --profile llama-8b-h100
	local target=$url
	repo_with_baseline
	serve github "$bin/fakegh" serve -state "$d/gh" -token e2e-token -repo acme/serving -pr 7 -seed 3 || exit 1
	local api=$url
	local event=$REPO_ROOT/testdata/action/pull_request.json

	mapfile -t env1 < <(ci_env "$d/repo" "$event" "$api" "$target" 1)
	expect 0 ci-1 env "${env1[@]}" "$SLOGATE" ci || exit 1
	files repo/slogate-out chat.json gate.json comment.md report.html report-meta.json
	jqc "ci: gate.json verdict pass" repo/slogate-out/gate.json '.verdict == "pass" or .verdict == "improved" or .verdict == "warn"'
	[[ $(output "$d/outputs.1" verdict) =~ ^(pass|improved|warn)$ ]] && pass "ci: output verdict $(output "$d/outputs.1" verdict)" || fail "ci: output verdict '$(output "$d/outputs.1" verdict)'"
	[[ -n $(output "$d/outputs.1" goodput) && -n $(output "$d/outputs.1" itl-p99-ms) && -n $(output "$d/outputs.1" kv-concurrency) ]] &&
		pass "ci: outputs goodput, itl-p99-ms, kv-concurrency" || fail "ci: headline outputs missing ($(tr '\n' ' ' <"$d/outputs.1"))"
	local url1
	url1=$(output "$d/outputs.1" comment-url)
	[[ $url1 == *"/pull/7#issuecomment-"* ]] && pass "ci: comment-url $url1" || fail "ci: comment-url '$url1'"
	grepc "ci: job summary written with the verdict table" "$d/summary.1" 'itl_p99'
	[[ $(ghstat "$d/gh" creates) == 1 && $(ghstat "$d/gh" sticky_comments) == 1 && $(ghstat "$d/gh" updates) == 0 ]] &&
		pass "ci: one sticky comment created" || fail "ci: after one run: $("$bin/fakegh" stats -state "$d/gh" | tr '\n' ' ')"
	# What the comment says is what slogate report renders from the files.
	if expect 0 report "$SLOGATE" report -r repo/slogate-out --markdown again.md; then
		cmp -s repo/slogate-out/comment.md again.md && pass "report: the same comment from the files alone" || fail "report: differs from ci's comment.md"
	fi

	mapfile -t env2 < <(ci_env "$d/repo" "$event" "$api" "$target" 2)
	expect 0 ci-2 env "${env2[@]}" "$SLOGATE" ci || exit 1
	[[ $(ghstat "$d/gh" creates) == 1 && $(ghstat "$d/gh" updates) == 1 && $(ghstat "$d/gh" sticky_comments) == 1 && $(ghstat "$d/gh" bot_comments) == 1 ]] &&
		pass "ci: the second run updated the same comment in place" || fail "ci: after two runs: $("$bin/fakegh" stats -state "$d/gh" | tr '\n' ' ')"
	[[ $(output "$d/outputs.2" comment-url) == "$url1" ]] && pass "ci: the same comment-url" || fail "ci: comment-url changed: $(output "$d/outputs.2" comment-url)"
	[[ $(ghstat "$d/gh" unauthorized) == 0 && $(ghstat "$d/gh" unexpected) == 0 ]] && pass "ci: no unauthorized or unexpected call" ||
		fail "ci: $("$bin/fakegh" stats -state "$d/gh" | grep '^#' | tr '\n' ' ')"
}

# A pull request from a fork: refused by default (exit 3) before anything runs, no call to
# GitHub, the summary saying why and naming allow-fork-prs; with allow-fork-prs: true
# and the read-only token a fork gets, the gate runs, the files are written, the comment
# is refused (403) and that is a warning, not a failure.
scenario_fork_pull_request() {
	cd "$d" || exit 1
	sim engine --profile llama-8b-h100
	local target=$url
	repo_with_baseline
	jq '.pull_request.head.repo = {"full_name": "stranger/serving", "fork": true}' \
		"$REPO_ROOT/testdata/action/pull_request.json" >fork.json
	serve github "$bin/fakegh" serve -state "$d/gh" -token e2e-token -repo acme/serving -pr 7 -readonly || exit 1
	local api=$url

	mapfile -t env1 < <(ci_env "$d/repo" "$d/fork.json" "$api" "$target" 1)
	expect 3 ci-refused env "${env1[@]}" "$SLOGATE" ci
	grepc "fork: the summary says it was not run" "$d/summary.1" 'not run'
	grepc "fork: the refusal names allow-fork-prs" ci-refused.log 'allow-fork-prs'
	[[ $(output "$d/outputs.1" verdict) == error ]] && pass "fork: output verdict error" || fail "fork: output verdict '$(output "$d/outputs.1" verdict)'"
	[[ ! -e repo/slogate-out/chat.json ]] && pass "fork: nothing was run" || fail "fork: a record was written for a refused fork"
	[[ $(ghstat "$d/gh" calls) == 0 ]] && pass "fork: no call to GitHub" || fail "fork: $(ghstat "$d/gh" calls) calls to GitHub"

	mapfile -t env2 < <(ci_env "$d/repo" "$d/fork.json" "$api" "$target" 2)
	expect 0 ci-allowed env "${env2[@]}" "INPUT_ALLOW-FORK-PRS=true" "$SLOGATE" ci || exit 1
	files repo/slogate-out chat.json gate.json comment.md report.html
	jqc "fork allowed: gate.json verdict pass" repo/slogate-out/gate.json '.verdict == "pass" or .verdict == "improved" or .verdict == "warn"'
	grepc "fork allowed: the refused comment is a warning annotation naming the read-only token" ci-allowed.log '::warning.*read-only'
	grepc "fork allowed: the summary still has the verdict" "$d/summary.2" 'itl_p99'
	[[ $(ghstat "$d/gh" readonly_refusals) -ge 1 && $(ghstat "$d/gh" creates) == 0 ]] && pass "fork allowed: the write was refused, no comment made" ||
		fail "fork allowed: $("$bin/fakegh" stats -state "$d/gh" | tr '\n' ' ')"
	[[ -z $(output "$d/outputs.2" comment-url) ]] && pass "fork allowed: comment-url empty" || fail "fork allowed: comment-url '$(output "$d/outputs.2" comment-url)'"
}

# The one-at-a-time engine: serialsim holds one sequence at a time, 10 ms a step, so a
# request of 16 output tokens takes about 160 ms (6.25 req/s at most). The dispatch-lag
# bound is loose because CI machines are shared (a machine at load 8 on 2 cores showed
# 190 ms at p99): a step the client could not send on time stops the sweep.
serial_config() { # NAME SEED ARRIVAL SLO [extra workload lines]
	cat <<YAML
version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: $1
    seed: $2
    duration: 30s
    warmup: {requests: 3}
    arrival: {process: $3, rate: 1}
    prompt_tokens: {dist: fixed, value: 32}
    output_tokens: {dist: fixed, value: 16}
    timeout: 60s
    max_dispatch_lag: 250ms
    slo: $4
${5-}
capacity:
  peak_rps: 40
  target_utilization: 0.6
  headroom: 0.3
  redundancy: 1
  gpu_hour_usd: 2.50
YAML
}

# A sweep whose SLO is a p99 (the attainment target's own percentile) finds the
# one-at-a-time engine's capacity, below its 6.25 req/s, and `slogate capacity` turns the
# sweep record into a worksheet.
scenario_sweep_capacity() {
	cd "$d" || exit 1
	serve engine "$bin/serialsim" -addr 127.0.0.1:0 -step 10ms
	serial_config serial 5 poisson '{ttft: {p99: 1s}}' >slogate.yaml
	expect 0 sweep "$SLOGATE" sweep -q -c slogate.yaml -w serial --target "$url" -o out --min-rate 2 --step-duration 10s --precision 10% || exit 1
	files out serial.sweep.json serial.sweep/step1.json
	jqc "sweep: schema and steps" out/serial.sweep.json '.schema == "slogate.sweep/v1" and (.steps | length) >= 3'
	jqc "sweep: max_sustainable_rps within (1, 6.25] req/s" out/serial.sweep.json '.max_sustainable_rps > 1 and .max_sustainable_rps <= 6.25'
	jqc "sweep: bounded by the SLO" out/serial.sweep.json '.bound == "slo"'
	grepc "sweep: prints the max sustainable rate" sweep.log 'max sustainable rate: [0-9]'
	if expect 0 capacity "$SLOGATE" capacity -r out/serial.sweep.json -c slogate.yaml; then
		grepc "capacity: the worksheet counts GPUs" capacity.log 'GPU'
		grepc "capacity: and prices a request" capacity.log '\$'
	fi
}

# Issue's item 2: the sweep judges each step by the SLO as declared. The SLO is `ttft:
# {p95: 600ms}`; one request in 25 generates 200 tokens and holds the one-at-a-time
# engine for 2 s, so the next arrival waits about 1 s. With seed 3 the first step (1 req/s,
# constant arrivals, 30 requests) holds exactly one such request: one request of 30
# misses (attainment 96.67%, below a 99% target) while the step's TTFT p95 is about
# 170 ms, well within the SLO. Judged as declared, the step passes and the sweep reports
# a capacity; judged by attainment it reported none.
scenario_sweep_declared_slo() {
	cd "$d" || exit 1
	serve engine "$bin/serialsim" -addr 127.0.0.1:0 -step 10ms
	serial_config serial 3 constant '{ttft: {p95: 600ms}}' '    classes:
      - {name: short, weight: 24}
      - {name: long, weight: 1, output_tokens: {dist: fixed, value: 200}}' >slogate.yaml
	expect 0 sweep "$SLOGATE" sweep -q -c slogate.yaml -w serial --target "$url" -o out --step-duration 30s --max-rate 2 --precision 50%
	files out serial.sweep.json serial.sweep/step1.json
	# The premise: the first step has the one slow request and the one miss behind it.
	jqc "sweep (declared p95): step 1 holds one 200-token request" out/serial.sweep/step1.json \
		'[.requests[] | select(.warmup | not) | select(.output_target == 200)] | length == 1'
	jqc "sweep (declared p95): step 1's TTFT p95 is within 600 ms" out/serial.sweep/step1.json '.summary.ttft_ms.p95 <= 600'
	jqc "sweep (declared p95): the first step, at 1 req/s, passes" out/serial.sweep.json '.steps[0].rate_rps == 1 and .steps[0].verdict == "pass"'
	jqc "sweep (declared p95): max_sustainable_rps present, at least 1 req/s" out/serial.sweep.json '(.max_sustainable_rps // 0) >= 1'
	if grep -q 'max sustainable rate: none' sweep.log; then fail "sweep (declared p95): printed 'max sustainable rate: none'"; else pass "sweep (declared p95): a rate printed"; fi
}

# Issue's item 1: a fresh simulator's first cold run under KV pressure (the tiny profile
# preempts) is judged. Its prefix-cache hits are the run's own (sequences re-admitted on
# their own blocks): the record reports them apart from the foreign ones, the run exits
# 0 and becomes a baseline.
scenario_cold_under_kv_pressure() {
	cd "$d" || exit 1
	sim engine
	cat >slogate.yaml <<'YAML'
version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: cold
    seed: 11
    requests: 150
    warmup: {requests: 2}
    arrival: {process: poisson, rate: 10}
    prompt_tokens: {dist: lognormal, p50: 100, p95: 300, max: 500}
    output_tokens: {dist: lognormal, p50: 100, p95: 250, max: 400}
    prefix_cache: cold
    timeout: 120s
    # CI machines are shared: the client's precision is not what this checks.
    max_dispatch_lag: 200ms
gate:
  baselines: baselines
YAML
	expect 0 run "$SLOGATE" run -q -c slogate.yaml --target "$url" -o out
	if grep -q 'a cold run found' run.log; then fail "cold: refused as warm: $(grep -o 'a cold run found[^:]*' run.log | head -n 1)"; else pass "cold: not refused as warm"; fi
	local rec=out/cold.json
	jqc "cold: the engine preempted (KV pressure)" $rec '(.summary.preemptions // 0) > 0'
	jqc "cold: the engine reported prefix-cache hits" $rec '.summary.prefix_cache.hits > 0'
	jqc "cold: own hits reported apart" $rec '.summary.prefix_cache | (.own.hits // .own_hits) != null'
	jqc "cold: foreign hits reported" $rec '.summary.prefix_cache.foreign_hits != null'
	jqc "cold: foreign hits at most 5% of the prompt tokens queried" $rec \
		'.summary.prefix_cache | .foreign_hits / .queries <= 0.05'
	expect 0 baseline-update "$SLOGATE" baseline update -c slogate.yaml -r out &&
		files baselines/cold sim.json
}

# Tasks (docs/capacity.md): three-turn sessions are tasks, a failed turn is sent again up
# to twice; against a simulator failing 15% of its requests the record counts the retries
# as the tasks' requests, the baseline keeps a task_met column, and the worksheet prices a
# completed task.
scenario_tasks() {
	cd "$d" || exit 1
	sim engine --error-rate 0.15
	cat >slogate.yaml <<'YAML'
version: 1
target: {api: chat, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: agent
    seed: 5
    arrival: {process: poisson, rate: 10}
    sessions: {count: 40, turns: 3, user_tokens: {dist: uniform, min: 10, max: 30}, output_tokens: 8, think_time: 5ms}
    tasks: {success: all, retries: 2}
    timeout: 20s
    max_dispatch_lag: 200ms
    slo: {ttft: {p95: 5s}}
gate:
  baselines: baselines
  rules:
    task_goodput: {direction: higher, tolerance: 10%}
capacity: {peak_rps: 20, target_utilization: 80%, gpu_hour_usd: 2}
YAML
	expect 0 run "$SLOGATE" run -c slogate.yaml --target "$url" -o out || exit 1
	local rec=out/agent.json
	jqc "tasks: the record carries the task rule" $rec '.tasks == {"by": "session", "success": "all", "retries": 2}'
	jqc "tasks: 40 tasks, most completed" $rec '.summary.tasks | .tasks == 40 and .completed >= 30 and .met <= .completed'
	jqc "tasks: retries are requests of their task" $rec \
		'([.requests[] | select((.attempt // 0) > 0)] | length) as $r | $r > 0 and .summary.tasks.retries == $r and .summary.tasks.requests == (.requests | length)'
	jqc "tasks: a completed task cost more than its 3 turns" $rec '.summary.tasks.requests_per_completed_task > 3'
	grepc "tasks: the terminal table states the tasks" run.log 'tasks \(sessions, success: all\): [0-9]+ of 40 completed'
	expect 0 baseline-update "$SLOGATE" baseline update -c slogate.yaml -r out &&
		jqc "tasks: the baseline keeps task_met, one per task" baselines/agent/sim.json '.trials[0].requests.task_met | length == 40'
	if expect 0 capacity "$SLOGATE" capacity -r $rec -c slogate.yaml; then
		grepc "tasks: the worksheet prices a completed task" capacity.log 'cost per completed task = .* \$[0-9]'
	fi
}

# A run split into two shards sharing one start time, sent at once, merged exactly:
# the merged record holds every request once and the gate judges it like a plain run.
scenario_shards_merge() {
	cd "$d" || exit 1
	gate_config chat 200 >slogate.yaml
	sim engine --profile llama-8b-h100
	expect 0 run-base "$SLOGATE" run -q -c slogate.yaml --target "$url" -o base || exit 1
	expect 0 baseline-update "$SLOGATE" baseline update -c slogate.yaml -r base || exit 1
	local at rc1=0 rc2=0
	at=@$(($(date +%s) + 6))
	"$SLOGATE" run -q -c slogate.yaml --target "$url" --shard 1/2 --start-at "$at" -o s1 >shard1.log 2>&1 &
	local p1=$!
	"$SLOGATE" run -q -c slogate.yaml --target "$url" --shard 2/2 --start-at "$at" -o s2 >shard2.log 2>&1 &
	local p2=$!
	wait $p1 || rc1=$?
	wait $p2 || rc2=$?
	((rc1 == 0 && rc2 == 0)) && pass "shards: both exit 0" || { fail "shards: exit $rc1 and $rc2"; tail -n 5 shard1.log shard2.log; exit 1; }
	expect 0 merge "$SLOGATE" merge -o merged s1 s2 || exit 1
	files merged chat.json
	jqc "merge: two shards" merged/chat.json '(.shards | length) == 2'
	jqc "merge: every request once (200)" merged/chat.json '.summary.requests == 200 and ([.requests[].i] | unique | length) == 200'
	jqc "merge: the same workload hash as the plain run" merged/chat.json '.workload_hash == $b[0].workload_hash' --slurpfile b base/chat.json
	if expect 0 gate "$SLOGATE" gate -c slogate.yaml -r merged --json merged/gate.json; then
		jqc "merge: gated as one run" merged/gate.json '.verdict == "pass" or .verdict == "improved" or .verdict == "warn"'
	fi
}

# Export a record as CSV and as vLLM's --save-result JSON; import that JSON back as a record
# with its provenance; a baseline from one import gates an import of the same benchmark.
scenario_import_export() {
	cd "$d" || exit 1
	gate_config chat 100 >slogate.yaml
	sim engine --profile llama-8b-h100
	expect 0 run "$SLOGATE" run -q -c slogate.yaml --target "$url" -o run || exit 1
	local n
	n=$(jq '.requests | length' run/chat.json)
	if expect 0 export-csv "$SLOGATE" export --csv run/chat.json -o requests.csv; then
		head -n 1 requests.csv | grep -q '^i,class,sched_us,send_us,first_us,last_us,end_us,prompt_tokens,output_tokens,chunks,error,slo_met' &&
			pass "export --csv: the documented header" || fail "export --csv: header $(head -n 1 requests.csv)"
		[[ $(($(wc -l <requests.csv) - 1)) == "$n" ]] && pass "export --csv: a row per request ($n)" || fail "export --csv: $(($(wc -l <requests.csv) - 1)) rows for $n requests"
	fi
	expect 0 export-gaps "$SLOGATE" export --csv --gaps run/chat.json -o gaps.csv &&
		{ head -n 1 gaps.csv | grep -q '^i,k,gap_us' && pass "export --csv --gaps: header i,k,gap_us" || fail "export --gaps: header $(head -n 1 gaps.csv)"; }
	expect 0 export-vllm "$SLOGATE" export --vllm --rate 20 run/chat.json -o vllm.json || exit 1
	jqc "export --vllm: vLLM's fields" vllm.json '.completed > 0 and (.ttfts | length) > 0 and (.itls | length) > 0'
	expect 0 import-a "$SLOGATE" import --from vllm vllm.json -c slogate.yaml -w chat -o imp-a || exit 1
	files imp-a chat.json
	jqc "import: provenance from vllm, with the file's sha256" imp-a/chat.json '.source.tool == "vllm" and (.source.sha256 | length) == 64'
	jqc "import: the requests came across" imp-a/chat.json '.summary.completed == $n' --argjson n "$(jq .completed vllm.json)"
	expect 0 baseline-imported "$SLOGATE" baseline update -c slogate.yaml -r imp-a || exit 1
	files baselines/chat imported.json
	expect 0 import-b "$SLOGATE" import --from vllm vllm.json -c slogate.yaml -w chat -o imp-b || exit 1
	if expect 0 gate-imported "$SLOGATE" gate -c slogate.yaml -r imp-b --json imp-b/gate.json; then
		# KV-limited concurrency is a warning: vLLM's file does not say the engine's KV cache.
		jqc "gate: an import against its imported baseline passes, with provenance" imp-b/gate.json \
			'(.verdict == "pass" or .verdict == "warn") and (.workloads[0].metrics[] | select(.metric == "itl_p99") | .verdict == "pass") and (.workloads[0].provenance | length) == 2'
	fi
	# A real AIPerf 0.10.0 export (testdata/import/peers): read as its summary states it,
	# and a baseline of it.
	local peers=$REPO_ROOT/testdata/import/peers
	if expect 0 import-aiperf "$SLOGATE" import --from aiperf "$peers/aiperf_0.10.0_chatbot/profile_export.jsonl" -c "$REPO_ROOT/testdata/import/peers.yaml" -w aiperf-chatbot -o aiperf; then
		jqc "import: AIPerf 0.10.0's 10 requests all succeeded, with their model" aiperf/aiperf-chatbot.json \
			'.summary.completed == 10 and .summary.requests == 10 and .model == "Llama-3.1-8B-Instruct-optimumxt" and .source.tool_version == "0.10.0"'
		expect 0 baseline-aiperf "$SLOGATE" baseline update -c "$REPO_ROOT/testdata/import/peers.yaml" --baselines aiperf-baselines -r aiperf
		# The same benchmark as another run wrote it (its own artifact directory), gated
		# against that baseline: one workload, every ratio 1, never a fail.
		mkdir -p aiperf-run2/in
		cp "$peers/aiperf_0.10.0_chatbot/profile_export.jsonl" aiperf-run2/in/
		sed 's|/work/results/nvfp4/spark_repro_llama31|/home/ci/run-2|g' "$peers/aiperf_0.10.0_chatbot/profile_export_aiperf.json" >aiperf-run2/in/profile_export_aiperf.json
		expect 0 import-aiperf-2 "$SLOGATE" import --from aiperf aiperf-run2/in/profile_export.jsonl -c "$REPO_ROOT/testdata/import/peers.yaml" -w aiperf-chatbot -o aiperf-run2/out
		expect_0or4 gate-aiperf "gate: two imports of one real AIPerf benchmark compare (one hash), every ratio 1, no fail" aiperf-run2/gate.json \
			'.verdict != "incomparable" and .verdict != "fail" and ([.workloads[0].metrics[] | select(.ratio != null) | .ratio] | length > 0 and all(. == 1))' \
			"$SLOGATE" gate -c "$REPO_ROOT/testdata/import/peers.yaml" --baselines aiperf-baselines -r aiperf-run2/out --json aiperf-run2/gate.json
	fi
}

# A/B in one job: the engine against itself passes; against a copy four times slower the
# candidate fails on ITL p99. Four blocks (ABBA) of 60 requests each.
scenario_ab() {
	cd "$d" || exit 1
	gate_config chat 60 >slogate.yaml
	sim a --profile llama-8b-h100
	local a=$url
	sim b --profile llama-8b-h100 --seed 2
	local b=$url
	sim slow --profile llama-8b-h100 --slowdown 4
	local slow=$url
	# The same engine on both sides never fails: eight blocks mostly show ITL p99 within
	# 50% (pass, exit 0); a loaded machine may spread them past it (inconclusive, exit 4).
	if expect_0or4 ab-same "ab: same engine does not fail, judged by its blocks" same/gate.json \
		'(.verdict == "pass" or .verdict == "improved" or .verdict == "warn" or .verdict == "inconclusive") and (.workloads[0].metrics[] | select(.metric == "itl_p99") | .method == "blocks")' \
		"$SLOGATE" ab -c slogate.yaml --baseline-target "$a" --candidate-target "$b" --blocks 8 -o same; then
		files same chat.ab1.baseline.json chat.ab2.candidate.json gate.json comment.md report.html
	fi
	# An engine against itself under a 1% ITL tolerance that four blocks mostly cannot
	# resolve: not decided either way. It reads inconclusive in the terminal, gate.json and
	# the comment, says what would decide it, and exits 4 under the default fail-on; fail-on
	# fail lets it exit 0, with a warning. Four blocks of a quiet engine can give an
	# interval of ±4% that lies wholly below +1% (pass, a few jobs in a hundred): such a
	# job is checked to be that, and the job is run again, at most three times in all.
	gate_config chat 60 | sed 's/itl_p99: {direction: lower, tolerance: 50%}/itl_p99: {direction: lower, tolerance: 1%}/' >tight.yaml
	# undecided_ab NAME WANT [FLAGS...]: the tight A/A job, run until it is not decided
	# (exit WANT), at most three times; sets $undecided to the job's name.
	undecided_ab() {
		local name=$1 want=$2 try rc
		shift 2
		undecided=""
		for try in 1 2 3; do
			rc=0
			"$SLOGATE" ab -c tight.yaml --baseline-target "$a" --candidate-target "$b" --blocks 4 "$@" -o $name$try >"$d/$name$try.log" 2>&1 || rc=$?
			if [[ $rc == "$want" ]] && jq -e '.verdict == "inconclusive"' $name$try/gate.json >/dev/null 2>&1; then
				pass "$name: exit $rc (job $try)"
				undecided=$name$try
				return 0
			fi
			if [[ $rc == 0 || $rc == 1 ]] && jq -e '.workloads[0].metrics[] | select(.metric == "itl_p99") | (.verdict == "pass" and .hi <= 1.01) or (.verdict == "improved" and .hi < 0.99) or (.verdict == "fail" and .lo > 1.01)' $name$try/gate.json >/dev/null 2>&1; then
				pass "$name: job $try decided itl_p99 at ±1% (exit $rc, $(jq -r '.workloads[0].metrics[] | select(.metric == "itl_p99") | "\(.verdict) [\(.lo), \(.hi)]"' $name$try/gate.json)), as its interval bears out; run again"
				continue
			fi
			fail "$name: job $try: exit $rc, want $want (or a decision its interval bears out)"
			tail -n 25 "$d/$name$try.log" | sed 's/^/        | /'
			return 1
		done
		fail "$name: three jobs of an engine against itself all decided a ±1% rule at 4 blocks"
		return 1
	}
	local undecided
	if undecided_ab ab-undecided 4; then
		jqc "ab: an undecidable rule is inconclusive, saying what would decide it" $undecided/gate.json \
			'.verdict == "inconclusive" and (.workloads[0].metrics[] | select(.metric == "itl_p99") | .verdict == "inconclusive" and (.undecided | test("the rule asks ±1%")))'
		grepc "ab: the terminal says inconclusive" "$d/$undecided.log" 'itl_p99 .*INCONCLUSIVE'
		grepc "ab: the comment says inconclusive" $undecided/comment.md 'inconclusive'
		grepc "ab: stderr says why it exits 4" "$d/$undecided.log" 'the verdict is inconclusive: a rule was not decided either way \(exit 4'
	fi
	if undecided_ab ab-undecided-failon 0 --fail-on fail; then
		grepc "ab --fail-on fail: an inconclusive job exits 0, not silently" "$d/$undecided.log" 'warning: the verdict is inconclusive'
	fi
	if expect 1 ab-slow "$SLOGATE" ab -c slogate.yaml --baseline-target "$a" --candidate-target "$slow" --blocks 4 -o slow; then
		jqc "ab: 4x slower candidate fails on itl_p99" slow/gate.json '.verdict == "fail" and (.workloads[0].metrics[] | select(.metric == "itl_p99") | .verdict == "fail")'
	fi
	# Sequential, at most 8 blocks: its sequences cannot decide on fewer than four pairs,
	# so it runs all 8 and, with --final-share 0.5, is judged there by the blocks' fixed
	# interval at 97.5%.
	if expect 1 ab-final "$SLOGATE" ab -c slogate.yaml --baseline-target "$a" --candidate-target "$slow" --blocks 8 --min-blocks 4 --final-share 0.5 -o final; then
		jqc "ab --final-share: judged at the maximum by the fixed interval" final/gate.json \
			'.verdict == "fail" and .workloads[0].blocks_run == 8 and (.workloads[0].stopped.why | test("judged there by the blocks. fixed interval at 97.5% confidence")) and (.workloads[0].metrics[] | select(.metric == "itl_p99") | .verdict == "fail")'
		jqc "ab --final-share: each block's record keeps the share" final/chat.ab1.baseline.json '.ab.final_share == 0.5'
	fi
}

# Calibration: three A/A runs become the baseline with each gated metric's run-to-run
# spread; a candidate run is then judged with that spread (method calibrated). Then a
# sequential calibration (--min-runs) that records how its runs stopped.
scenario_calibrate() {
	cd "$d" || exit 1
	gate_config chat 100 >slogate.yaml
	sim engine --profile llama-8b-h100
	expect 0 calibrate "$SLOGATE" calibrate -c slogate.yaml --target "$url" --runs 3 -o cal || exit 1
	files cal chat.c1.json chat.c2.json chat.c3.json
	files baselines/chat sim.json
	jqc "calibrate: the baseline stores 3 runs and their spread" baselines/chat/sim.json \
		'.noise.source == "calibrate" and .noise.runs == 3 and (.noise.metrics | map(.metric) | contains(["itl_p99", "goodput"]))'
	expect 0 run "$SLOGATE" run -q -c slogate.yaml --target "$url" -o cand || exit 1
	# The same engine again: never a fail. A pass needs the runner quiet: beside the
	# Action's runs in CI, the 3 runs once spread ±52% in ITL p99, over the rule's ±50%,
	# and the rule was rightly undecided (exit 4).
	expect_0or4 gate "calibrate: the gate adds the calibrated spread to an unchanged engine's ITL p99, which it does not fail" cand/gate.json \
		'.workloads[0].metrics[] | select(.metric == "itl_p99") | .method == "calibrated" and .noise.source == "calibration" and .verdict != "fail"' \
		"$SLOGATE" gate -c slogate.yaml -r cand --json cand/gate.json
	# A 4× slower engine against that 3-run calibration fails: the interval is finite, on
	# at least the calibration's 2 degrees of freedom, however the runs' spread splits.
	sim slow --profile llama-8b-h100 --slowdown 4
	expect 0 run-slow "$SLOGATE" run -q -c slogate.yaml --target "$url" -o slow || exit 1
	if expect 1 gate-slow "$SLOGATE" gate -c slogate.yaml -r slow --json slow/gate.json; then
		jqc "calibrate: a 4x slower candidate fails on itl_p99, on at least the calibration's degrees of freedom" slow/gate.json \
			'.workloads[0].metrics[] | select(.metric == "itl_p99") | .verdict == "fail" and .method == "calibrated" and .noise.df >= 2 and .hi != null'
	fi
	# A sequential calibration: from the third run on it stops once every rule is
	# decided, at the latest after the sixth; the baseline says how and why.
	expect 0 calibrate-seq "$SLOGATE" calibrate -c slogate.yaml --target "$url" --runs 6 --min-runs 3 --baselines seq -o calseq || exit 1
	jqc "calibrate --min-runs: the baseline records how its runs stopped" seq/chat/sim.json \
		'.noise.stop.min_runs == 3 and .noise.stop.max_runs == 6 and .noise.stop.runs >= 3 and .noise.stop.runs <= 6 and .noise.runs == .noise.stop.runs and (.noise.stop.reason == "decided" or .noise.stop.runs == 6) and (.noise.stop.rules | length) > 0'
}

# llama.cpp's llama-server (built by scripts/llamacpp.sh, which scripts/llamacpp-test.sh
# runs first in .ci/run) serving stories260K: run, baseline update, a gate of a second
# run against it, and two sequential A/B jobs in restart mode (llamacpp_ab). Skipped, loudly, when the server is not built: building it takes
# longer than this suite's budget.
scenario_llamacpp() {
	cd "$d" || exit 1
	local cache=${SLOGATE_CACHE:-$HOME/.cache/slogate}/llama.cpp-node-llama-cpp-3.22.1
	if [[ ! -x $cache/bin/llama-server || ! -f $cache/BUILD ]]; then
		echo "  SKIP  llamacpp: llama-server is not built in $cache (scripts/llamacpp.sh build)"
		exit 2
	fi
	export LLAMACPP_STATE=$d/llamacpp.env LLAMACPP_PARALLEL=4 LLAMACPP_CTX=2048
	"$REPO_ROOT/scripts/llamacpp.sh" start >llamacpp-start.log 2>&1 || { cat llamacpp-start.log; need "llama-server did not start"; }
	trap '"$REPO_ROOT/scripts/llamacpp.sh" stop >/dev/null 2>&1; stop_all' EXIT
	# shellcheck disable=SC1090
	. "$LLAMACPP_STATE"
	# The pinned workload of the llama.cpp checks (its -np 4 form), as a team's config.
	cp "$REPO_ROOT/testdata/llamacpp/slogate.yaml" . || need "testdata/llamacpp/slogate.yaml"
	local w=llamacpp-smoke
	expect 0 run-base "$SLOGATE" run -q -c slogate.yaml -w $w --target "$LLAMACPP_URL" -o base || exit 1
	jqc "llamacpp: the engine detected as llamacpp" base/$w.json '.engine.name == "llamacpp"'
	jqc "llamacpp: every request completed" base/$w.json '.summary.completed == 100 and .summary.error_rate == 0'
	jqc "llamacpp: the server's token counters over the window" base/$w.json '.summary.engine_tokens.output > 0'
	expect 0 baseline-update "$SLOGATE" baseline update -c slogate.yaml -w $w -r base || exit 1
	# cpu without a GPU, the GPU's key with one.
	compgen -G "baselines/$w/*.json" >/dev/null && pass "llamacpp: baseline $(ls baselines/$w/*.json | head -n 1)" || fail "llamacpp: no baseline in baselines/$w"
	expect 0 run-cand "$SLOGATE" run -q -c slogate.yaml -w $w --target "$LLAMACPP_URL" -o cand || exit 1
	# An unchanged server never fails. One run against one baseline run of ITL gaps of a
	# few ms on a shared machine can move by half (×1.6 seen): its interval may reach
	# past even a +100% tolerance, and the rule is then inconclusive (exit 4).
	expect_0or4 gate "llamacpp: the gate does not fail an unchanged server" cand/gate.json \
		'.verdict == "pass" or .verdict == "improved" or .verdict == "warn" or .verdict == "inconclusive"' \
		"$SLOGATE" gate -c slogate.yaml -w $w -r cand --json cand/gate.json
	llamacpp_ab
}

# llamacpp_ab: slogate ab in restart mode (target.start starts llama-server afresh for
# every block) and sequential (--min-blocks 4 --max-blocks 16, --futility-from 8
# --final-share 0.5), blocks of 40 requests
# (4 s). Checked: -t 1 against itself passes; one slot (-np 1) against four fails on
# TTFT p95 (its requests queue) and stops before the maximum, decided. Reported, not
# checked: -t 1 against -t 2, which on 2 shared cores came out faster, slower or the
# same from one job to the next (docs/noise.md: 5 of 6 jobs alone showed a difference,
# the one run beside the other scenarios none). Each job says how many blocks it ran and
# why it stopped. SLOGATE_E2E_LLAMACPP_AB_FLAGS replaces the stopping flags, and
# SLOGATE_E2E_LLAMACPP_AB_MAX the maximum, for a measurement of other stopping rules
# (docs/noise.md); its checks are this default's.
llamacpp_ab() {
	local port
	port=$(free_port)
	local t np
	for t in t1 t2 np1; do
		np=4
		[[ $t == np1 ]] && np=1
		sed "s/^    requests: 150 .*/    requests: 40/" "$REPO_ROOT/testdata/llamacpp/noise.yaml" |
			awk -v url="http://127.0.0.1:$port" -v bin="$LLAMACPP_BIN" -v model="$LLAMACPP_MODEL" -v t="${t#t}" -v np="$np" -v port="$port" '
			{ print }
			/^target:$/ {
				if (t == "np1") t = 1
				print "  url: " url
				print "  start:"
				printf "    command: [\"%s\", -m, \"%s\", --host, 127.0.0.1, --port, \"%s\", -t, \"%s\", -c, \"2048\", -np, \"%s\", --metrics, --slots, --alias, stories260k]\n", bin, model, port, t, np
				print "    ready_timeout: 60s"
			}' >ab-$t.yaml
	done
	local c rc cand maxb=${SLOGATE_E2E_LLAMACPP_AB_MAX:-16}
	# ab_job: the job of candidate config $cand against -t 1, into ab-$c.
	ab_job() {
		# shellcheck disable=SC2086 # the flags are words
		"$SLOGATE" ab -c "$cand" --baseline-config ab-t1.yaml --min-blocks 4 --max-blocks "$maxb" ${SLOGATE_E2E_LLAMACPP_AB_FLAGS---futility-from 8 --final-share 0.5} -o "ab-$c" >"ab-$c.log" 2>&1
	}
	for c in self np1 t2; do
		rc=0
		cand=ab-$c.yaml
		[[ $c == self ]] && cand=ab-t1.yaml
		ab_job || rc=$?
		if [[ $c == self && $rc == 1 && -s ab-$c/gate.json ]]; then
			# Each rule of an A/A job fails at most α of the time, and on two shared
			# cores the load beside it moves between blocks (in CI once: itl_p99 1.458
			# [1.069, 1.989] at block 14). A correct rule fails two jobs in a row at most
			# α² of the time: the job runs once more, and its second run is checked.
			printf '  ..    llamacpp ab self: the first job failed (%s); running it once more\n' "$(jq -r '[.workloads[0].metrics[] | select(.verdict == "fail") | "\(.metric) \(.ratio * 1000 | round / 1000) [\(.lo * 1000 | round / 1000), \(.hi * 1000 | round / 1000)]"] | join(", ")' "ab-$c/gate.json")"
			mv "ab-$c" "ab-$c.first" && mv "ab-$c.log" "ab-$c.first.log"
			rc=0
			ab_job || rc=$?
		fi
		if [[ ! -s ab-$c/gate.json ]]; then
			tail -n 25 "ab-$c.log" | sed 's/^/        | /'
			fail "llamacpp ab $c: exit $rc, no gate.json"
			continue
		fi
		printf '  ..    llamacpp ab %s: exit %s, %s\n' "$c" "$rc" "$(jq -r '.workloads[0] | "\(.blocks_run) of \(.max_blocks) blocks (\(.stopped.why)); " + ([.metrics[] | select(.ratio != null) | "\(.metric) \(.ratio * 1000 | round / 1000) [\(if .lo == null then "0" else .lo * 1000 | round / 1000 end), \(if .hi == null then "inf" else .hi * 1000 | round / 1000 end)] \(.verdict)"] | join(", "))' "ab-$c/gate.json")"
		jqc "llamacpp ab $c: sequential, at most $maxb blocks, says how many ran and why" "ab-$c/gate.json" \
			".workloads[0] | .max_blocks == $maxb and .blocks_run >= 4 and .blocks_run <= $maxb and .stopped.at_block == .blocks_run and (.stopped.why | length > 0)"
		case $c in
		self)
			# The same server does not fail two jobs in a row (above); a futile stop
			# leaves its rules undecided (inconclusive, exit 4), never a pass without an
			# interval.
			if [[ $rc == 0 || $rc == 4 ]]; then
				pass "llamacpp ab: -t 1 against itself does not fail (exit $rc, $(jq -r .verdict ab-$c/gate.json))"
			else
				fail "llamacpp ab: -t 1 against itself: exit $rc, verdict $(jq -r .verdict ab-$c/gate.json)"
			fi
			jqc "llamacpp ab: -t 1 against itself: no rule passes without an interval inside its tolerance" "ab-$c/gate.json" \
				'[.workloads[0].metrics[] | select(.verdict == "pass" and .method == "blocks") | select(.lo == null or .hi == null or (.direction == "lower" and .hi > 1 + .tolerance) or (.direction == "higher" and .lo < 1 - .tolerance))] | length == 0'
			jqc "llamacpp ab: -t 1 against itself: exit 4 exactly when inconclusive" "ab-$c/gate.json" \
				"(.verdict == \"inconclusive\") == ($rc == 4)"
			jqc "llamacpp ab: -t 1 against itself stops before the maximum (futile or decided)" "ab-$c/gate.json" \
				".workloads[0] | (.stopped.reason == \"futile\" or .stopped.reason == \"decided\") and .blocks_run < $maxb"
			;;
		np1)
			if [[ $rc == 1 ]]; then
				pass "llamacpp ab: one slot against four fails (exit 1)"
			else
				fail "llamacpp ab: one slot against four: exit $rc, want 1"
			fi
			jqc "llamacpp ab: one slot fails on ttft_p95, decided before the maximum" "ab-$c/gate.json" \
				".workloads[0] | .stopped.reason == \"decided\" and .blocks_run < $maxb and (.metrics[] | select(.metric == \"ttft_p95\") | .verdict == \"fail\")"
			;;
		t2)
			if [[ $rc == 1 ]] || jq -e '[.workloads[].metrics[] | select(.lo != null and .hi != null) | select(.lo > 1.001 or .hi < 0.999)] | length > 0' "ab-$c/gate.json" >/dev/null; then
				printf '  ..    llamacpp ab: -t 1 against -t 2 showed a difference (exit %s, %s); reported, not checked\n' "$rc" "$(jq -r .verdict "ab-$c/gate.json")"
			else
				printf '  ..    llamacpp ab: -t 1 against -t 2 showed no difference (exit %s, %s); reported, not checked\n' "$rc" "$(jq -r .verdict "ab-$c/gate.json")"
			fi
			;;
		esac
	done
}

# free_port prints a loopback TCP port nothing listens on.
free_port() {
	local p
	for ((p = 20000 + RANDOM % 20000; p < 65000; p++)); do
		(: >/dev/tcp/127.0.0.1/$p) 2>/dev/null || {
			echo "$p"
			return 0
		}
	done
	need "no free port"
}

# ---------------------------------------------------------------------------------------

for s in "${scenarios[@]}"; do
	declare -F "scenario_$s" >/dev/null || { log "unknown scenario $s; scenarios: ${ALL_SCENARIOS[*]}"; exit 2; }
done

bin=$work/bin
mkdir -p "$bin"
t=$SECONDS
if [[ -n ${SLOGATE_E2E_BIN-} ]]; then
	cp "$SLOGATE_E2E_BIN" "$bin/slogate" || { log "FAIL: SLOGATE_E2E_BIN=$SLOGATE_E2E_BIN cannot be copied"; exit 1; }
else
	go build -o "$bin/slogate" ./cmd/slogate || { log "FAIL: building slogate"; exit 1; }
fi
go build -o "$bin/fakegh" ./testdata/action/fakegh || { log "FAIL: building testdata/action/fakegh"; exit 1; }
go build -o "$bin/serialsim" ./testdata/e2e/serialsim || { log "FAIL: building testdata/e2e/serialsim"; exit 1; }
log "built slogate, fakegh and serialsim in $((SECONDS - t)) s"
SLOGATE=$bin/slogate
"$SLOGATE" version >&2

# Scenarios run JOBS at a time (SLOGATE_E2E_JOBS, default 3), longest first: they wait on
# engines far more than they compute (on a 2-core machine: 68 CPU seconds in 641 s one at
# a time; 174 in 284 s in three lanes, most of it llama-server in the llamacpp
# scenario's A/B jobs), so lanes cut the wall time without loading the machine. Each
# scenario's output is printed whole when it ends.
jobs=${SLOGATE_E2E_JOBS:-3}
longest_first=(llamacpp sweep_declared_slo demo sweep_capacity baseline_gate ab shards_merge ci_pull_request calibrate fork_pull_request cold_under_kv_pressure tasks import_export)
ordered=()
for s in "${longest_first[@]}"; do
	[[ " ${scenarios[*]} " == *" $s "* ]] && ordered+=("$s")
done
for s in "${scenarios[@]}"; do
	[[ " ${ordered[*]} " == *" $s "* ]] || ordered+=("$s")
done

declare -A started_at name_of
results=()
failed=0
running=0
finish() { # wait for one scenario to end and report it
	local pid rc=0
	wait -n -p pid || rc=$?
	local s=${name_of[$pid]}
	unset "name_of[$pid]"
	running=$((running - 1))
	local took=$((SECONDS - started_at[$s])) verdict
	case $rc in
	0) verdict=PASS ;;
	2) verdict=SKIP ;;
	*)
		verdict=FAIL
		failed=$((failed + 1))
		;;
	esac
	printf '=== %s
' "$s"
	cat "$work/$s.out"
	printf '%s: scenario_%s (%d s)
' "$verdict" "$s" "$took"
	results+=("$(printf '%-4s  %-28s %4d s' "$verdict" "$s" "$took")")
}
for s in "${ordered[@]}"; do
	((running >= jobs)) && finish
	d=$work/$s
	mkdir -p "$d"
	started_at[$s]=$SECONDS
	(
		trap 'stop_all' EXIT
		trap 'exit 143' TERM
		"scenario_$s"
		exit $((fails > 0))
	) >"$work/$s.out" 2>&1 &
	name_of[$!]=$s
	running=$((running + 1))
done
while ((running > 0)); do
	finish
done

printf '\n=== e2e summary (%d s)\n' "$((SECONDS - T0))"
printf '%s\n' "${results[@]}"
if ((failed > 0)); then
	printf 'e2e: FAIL (%d of %d scenarios)\n' "$failed" "${#scenarios[@]}"
	exit 1
fi
echo "e2e: PASS"
