#!/usr/bin/env bash
# Runs the Action (action.yml at the repository root) in a real runner implementation,
# nektos/act, on this host, and checks what a pull request would get from it: one sticky
# comment (created by the first run, updated in place by the second, a reviewer's
# look-alike left alone), the job summary, the step outputs and slogate-out/report.html.
# The engine is the built-in simulator and GitHub is a fake on loopback
# (testdata/action/fakegh); nothing leaves the machine. docs/action.md explains the act
# specifics.
#
#   scripts/action-test.sh
#
# Run 1 has Go on PATH, so the action must skip actions/setup-go; run 2 hides Go, so the
# action must call it (a local stand-in, testdata/action/setup-go-standin, mapped in with
# act's --local-repository: act would otherwise clone actions/setup-go from github.com even
# for a step it then skips).
#
# Needs: Go, bash, coreutils (timeout), and the Go module proxy the first time: act is
# built from it (go install github.com/nektos/act@v0.2.89, 2-4 minutes on 2 cores) and
# cached. Measured on 2 cores: 231 s with cold Go caches, about 25 s after.
#
# Environment: SLOGATE_CACHE (default ~/.cache/slogate; act goes to act-VERSION/bin there),
# SLOGATE_ACTION_TEST_RUN_TIMEOUT (seconds per act run, default 300),
# SLOGATE_ACTION_TEST_INSTALL_TIMEOUT (seconds for building act, default 900),
# SLOGATE_ACTION_TEST_KEEP=1 (keep the work directory, with act's logs, for a post-mortem).
set -euo pipefail

ACT_VERSION=0.2.89
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# act copies its working directory into the job's workspace: the repository, for uses: ./.
cd "$REPO_ROOT"
ACT_DIR=${SLOGATE_CACHE:-$HOME/.cache/slogate}/act-$ACT_VERSION
ACT_BIN=$ACT_DIR/bin/act
RUN_TIMEOUT=${SLOGATE_ACTION_TEST_RUN_TIMEOUT:-300}
INSTALL_TIMEOUT=${SLOGATE_ACTION_TEST_INSTALL_TIMEOUT:-900}
REPO_NAME=acme/serving # the repository and pull request of testdata/action/pull_request.json
PR_NUMBER=7
SEED_COMMENTS=120 # over 100: finding the sticky comment needs the second page

T0=$SECONDS
failures=0
log() { printf 'action-test: %s\n' "$*" >&2; }
pass() { printf 'PASS: %s\n' "$*"; }
fail() {
	printf 'FAIL: %s\n' "$*"
	failures=$((failures + 1))
}
die() {
	printf 'FAIL: %s\n' "$*"
	exit 1
}
# check DESCRIPTION COMMAND...: PASS or FAIL by the command's status.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/slogate-action-test.XXXXXX")
pids=()
cleanup() {
	local rc=$?
	local p
	for p in "${pids[@]}"; do
		[[ -n $p ]] && kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [[ ${SLOGATE_ACTION_TEST_KEEP:-} == 1 || ($rc -ne 0 && -n ${CI:-}) ]]; then
		log "work directory kept: $work"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# waited COMMAND...: runs COMMAND in the background and waits for it, so that a signal to
# this script (a CI job cancelled) ends it through cleanup instead of leaving it running.
waited() {
	local p rc=0
	"$@" &
	p=$!
	pids+=("$p")
	wait "$p" || rc=$?
	local rest=() q
	for q in "${pids[@]}"; do
		[[ $q == "$p" ]] || rest+=("$q")
	done
	pids=("${rest[@]}")
	return "$rc"
}

# ---- static: the composite action maps every input and output -----------------------

# yaml_keys SECTION: the names declared at the second level under a top-level key.
yaml_keys() {
	awk -v sec="$1:" '
		/^[^ #]/ { on = ($0 == sec) ; next }
		on && /^  [A-Za-z0-9_-]+:/ { k = $1; sub(/:$/, "", k); print k }
	' "$REPO_ROOT/action.yml"
}
inputs=$(yaml_keys inputs)
outputs=$(yaml_keys outputs)
[[ -n $inputs && -n $outputs ]] || die "action.yml: no inputs or outputs found"
unmapped=()
for in in $inputs; do
	# Composite actions get no INPUT_* variables from the GitHub runner (act sets them,
	# so a missing mapping would pass under act): check the mapping itself.
	env_name="INPUT_$(tr '[:lower:]' '[:upper:]' <<<"$in")"
	grep -qF "$env_name: \${{ inputs.$in }}" "$REPO_ROOT/action.yml" || unmapped+=("$in")
done
check "action.yml maps every input to INPUT_* ($(wc -w <<<"$inputs") inputs)${unmapped[*]:+; unmapped: ${unmapped[*]}}" test ${#unmapped[@]} -eq 0
unmapped=()
# act also hands the composite step the outputs its last inner step wrote, whatever the
# outputs: section maps, so a broken mapping would pass under act too.
for out in $outputs; do
	grep -qF "value: \${{ steps.slogate.outputs.$out }}" "$REPO_ROOT/action.yml" || unmapped+=("$out")
done
check "action.yml maps every output from the tool's step ($(wc -w <<<"$outputs") outputs)${unmapped[*]:+; unmapped: ${unmapped[*]}}" test ${#unmapped[@]} -eq 0

# ---- tools ------------------------------------------------------------------------------

command -v go >/dev/null || die "go is not on PATH"
goroot=$(go env GOROOT)

if [[ -x $ACT_BIN ]] && "$ACT_BIN" --version 2>/dev/null | grep -qF "$ACT_VERSION"; then
	log "act $ACT_VERSION cached in $ACT_DIR"
else
	log "building act $ACT_VERSION from the Go module proxy into $ACT_DIR (minutes, once)"
	t=$SECONDS
	mkdir -p "$ACT_DIR/bin"
	# GOFLAGS replaces the caller's: a -mod=vendor from the environment would break a
	# module-proxy install.
	waited env GOFLAGS=-buildvcs=false GOBIN="$ACT_DIR/bin" CGO_ENABLED=0 \
		timeout "$INSTALL_TIMEOUT" go install "github.com/nektos/act@v$ACT_VERSION" ||
		die "building act $ACT_VERSION failed (or took over ${INSTALL_TIMEOUT}s)"
	log "built act in $((SECONDS - t)) s"
fi

t=$SECONDS
mkdir -p "$work/bin"
GOFLAGS=-buildvcs=false timeout 300 go build -o "$work/bin/fakegh" ./testdata/action/fakegh ||
	die "building testdata/action/fakegh failed"
# The flags of action.yml's build, so that the action's own build finds every package in
# the build cache and only links.
GOFLAGS=-buildvcs=false GOWORK=off CGO_ENABLED=0 timeout 300 go build -o "$work/bin/slogate" ./cmd/slogate ||
	die "building slogate (for the simulator) failed"
log "built fakegh and slogate in $((SECONDS - t)) s"

# ---- servers ----------------------------------------------------------------------------

# wait_for FILE PATTERN: until FILE has a line matching PATTERN (20 s at most).
wait_for() {
	local i
	for ((i = 0; i < 200; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

"$work/bin/slogate" sim --addr 127.0.0.1:0 --profile tiny 2>"$work/sim.log" &
pids+=($!)
wait_for "$work/sim.log" 'serving on http://' || die "the simulator did not start: $(cat "$work/sim.log")"
sim_url=$(sed -n 's|.*serving on \(http://[^ ]*\).*|\1|p' "$work/sim.log" | head -1)
log "simulator at $sim_url"

token="slogate-fake-token-$RANDOM$RANDOM"
gh_state=$work/github
"$work/bin/fakegh" serve -state "$gh_state" -token "$token" -repo "$REPO_NAME" -pr "$PR_NUMBER" \
	-seed "$SEED_COMMENTS" 2>"$work/fakegh.log" &
pids+=($!)
wait_for "$gh_state/addr" . || die "the fake GitHub API did not start: $(cat "$work/fakegh.log")"
api_url=http://$(cat "$gh_state/addr")
log "fake GitHub API at $api_url"

# ---- act --------------------------------------------------------------------------------

# path_without_go: PATH less every directory holding a go executable.
path_without_go() {
	local out="" d
	local IFS=:
	for d in $PATH; do
		[[ -n $d && ! -x $d/go ]] && out=${out:+$out:}$d
	done
	printf '%s' "$out"
}

# run_act N PATH: runs the workflow once; its captures go to $work/runN.
run_act() {
	local n=$1 path=$2 cap=$work/run$1
	mkdir -p "$cap"
	local t=$SECONDS rc=0
	# -P self-hosted=-self-hosted: the job's steps run on this host, no container engine.
	# --local-repository: actions/setup-go comes from testdata, not github.com.
	# The empty env, secret, var and input files keep a developer's .env or .secrets out.
	# --json: act logs each step's job summary there (fakegh summary extracts it).
	waited env PATH="$path" ACT_DISABLE_VERSION_CHECK=1 \
		timeout --kill-after=10 "$RUN_TIMEOUT" "$ACT_BIN" pull_request --json \
		-W testdata/action/gate.yml \
		-e testdata/action/pull_request.json \
		-P self-hosted=-self-hosted \
		--local-repository "actions/setup-go@v5=$REPO_ROOT/testdata/action/setup-go-standin" \
		--action-cache-path "$work/act-cache" \
		--no-cache-server \
		--env-file /dev/null --secret-file /dev/null --var-file /dev/null --input-file /dev/null \
		-s "GITHUB_TOKEN=$token" \
		--env "GITHUB_API_URL=$api_url" \
		--env "GITHUB_REPOSITORY=$REPO_NAME" \
		--env "GITHUB_REF=refs/pull/$PR_NUMBER/merge" \
		--env "SLOGATE_TEST_TARGET=$sim_url" \
		--env "SLOGATE_TEST_CAPTURE=$cap" \
		--env "SLOGATE_TEST_GOROOT=$goroot" >"$cap/act.json" 2>&1 || rc=$?
	echo "$((SECONDS - t))" >"$cap/seconds"
	echo "$rc" >"$cap/rc"
	"$work/bin/fakegh" summary -log "$cap/act.json" >"$cap/summary.md" || true
	log "act run $n: exit $rc in $((SECONDS - t)) s (log: $cap/act.json)"
	if [[ $rc -eq 124 || $rc -eq 137 ]]; then
		fail "run $n: act did not finish within ${RUN_TIMEOUT}s"
	fi
	return 0
}

# output N NAME: a step output captured by run N.
output() { sed -n "s/^$2=//p" "$work/run$1/outputs.env" 2>/dev/null | head -1; }
# gh KEY: a fact from the fake GitHub API.
gh() { "$work/bin/fakegh" stats -state "$gh_state" | sed -n "s/^$1=//p"; }

check_run() {
	local n=$1 cap=$work/run$1
	local rc verdict outcome
	rc=$(cat "$cap/rc")
	verdict=$(output "$n" verdict)
	outcome=$(output "$n" outcome)
	check "run $n: the workflow ran to its last step" test -f "$cap/outputs.env"
	check "run $n: mode baseline wrote baselines (step $(output "$n" baseline-outcome), verdict '$(output "$n" baseline-verdict)')" \
		test "$(output "$n" baseline-outcome)" = success -a "$(output "$n" baseline-verdict)" = baseline
	# The gate found the baseline the step before wrote: the two modes agree on where
	# baselines live (working-directory, gate.baselines).
	check "run $n: the gate compared against that baseline (verdict '$verdict', not incomparable)" \
		test -n "$verdict" -a "$verdict" != incomparable
	case $verdict in
	pass | improved | warn)
		check "run $n: verdict '$verdict' passes with fail-on: fail (step $outcome, act exit $rc)" \
			test "$outcome" = success -a "$rc" = 0
		;;
	incomparable | fail | error)
		check "run $n: verdict '$verdict' fails the step with fail-on: fail (step $outcome)" \
			test "$outcome" = failure
		;;
	*)
		fail "run $n: output verdict is '$verdict'; want one of pass, improved, warn, incomparable, fail, error"
		;;
	esac
	local rd rp cu
	rd=$(output "$n" results-dir)
	rp=$(output "$n" report-path)
	cu=$(output "$n" comment-url)
	check "run $n: output results-dir is set ('$rd') and was a directory" \
		test -n "$rd" -a "$(output "$n" results-dir-exists)" = true
	check "run $n: output report-path names report.html ('$rp')" test "${rp##*/}" = report.html
	check "run $n: output comment-url names a comment ('$cu')" grep -q '#issuecomment-[0-9]' <<<"$cu"
	for o in goodput itl-p99-ms kv-concurrency; do
		check "run $n: output $o is set ('$(output "$n" "$o")')" test -n "$(output "$n" "$o")"
	done
	check "run $n: slogate-out/report.html was written" test -s "$cap/slogate-out/report.html"
	check "run $n: slogate-out/comment.md was written" test -s "$cap/slogate-out/comment.md"
	check "run $n: the job summary is not empty" test -s "$cap/summary.md"
	check "run $n: the job summary states the verdict '$verdict'" \
		grep -qiw -- "${verdict:-no verdict}" "$cap/summary.md"
	local found=0
	grep -rqF --exclude=act.json -- "$token" "$cap" || found=$?
	case $found in
	0) fail "run $n: the token appears in the files the tool wrote" ;;
	1) pass "run $n: the token appears in none of the files the tool wrote" ;;
	*) fail "run $n: could not search $cap for the token" ;;
	esac
}

show_failure_context() {
	local cap=$1
	[[ -f $cap/act.json ]] || return 0
	log "last messages of $cap/act.json:"
	# The JSON log's messages, without jq: good enough to see which step failed and why.
	tail -n 80 "$cap/act.json" |
		sed -n -e 's/.*"msg":"\(\([^"\\]\|\\.\)*\)".*/    \1/p' -e t -e '/^{/!s/^/    /p' | cut -c1-300 >&2
}

# Run 1: Go on PATH, no comment yet.
run_act 1 "$PATH"
check "run 1: actions/setup-go was skipped (Go is on PATH)" test ! -e "$work/run1/setup-go-ran"
check_run 1
check "run 1: the comment was created (creates=$(gh creates), updates=$(gh updates))" \
	test "$(gh creates)" = 1 -a "$(gh updates)" = 0
check "run 1: one sticky comment exists ($(gh sticky_comments))" test "$(gh sticky_comments)" = 1
check "run 1: the identity came from GET /user, which answered 403 (lookups=$(gh user_lookups))" \
	test "$(gh user_lookups)" -ge 1
check "run 1: the comments were listed past the first page (last page read: $(gh list_max_page))" \
	test "$(gh list_max_page)" -ge 2
[[ $failures -eq 0 ]] || show_failure_context "$work/run1"
url1=$(output 1 comment-url)

# A reviewer quotes the comment whole: the marker is in theirs too, the author is not us.
"$work/bin/fakegh" lookalike -state "$gh_state" || fail "could not add the look-alike comment"

# Run 2: Go hidden, so setup-go (the stand-in) must run; the comment must be updated.
before=$failures
run_act 2 "$(path_without_go)"
check "run 2: actions/setup-go ran (Go was not on PATH) with go-version-file pointing at go.mod" \
	grep -q '^go-version-file=.*/go\.mod$' "$work/run2/setup-go-ran"
check_run 2
check "run 2: the comment was updated in place (creates=$(gh creates), updates=$(gh updates))" \
	test "$(gh creates)" = 1 -a "$(gh updates)" = 1
check "run 2: still exactly one sticky comment ($(gh sticky_comments))" test "$(gh sticky_comments)" = 1
check "run 2: the comment URL did not change" test "$(output 2 comment-url)" = "$url1"
check "run 2: the look-alike comment was left alone (edited: $(gh lookalikes_edited))" \
	test "$(gh lookalikes)" = 1 -a "$(gh lookalikes_edited)" = 0
[[ $failures -eq $before ]] || show_failure_context "$work/run2"

stats=$("$work/bin/fakegh" stats -state "$gh_state")
check "every GitHub call carried the token and was one the fake knows ($(grep -E '^(unauthorized|unexpected)=' <<<"$stats" | tr '\n' ' '))" \
	test "$(gh unauthorized)" = 0 -a "$(gh unexpected)" = 0
grep '^#' <<<"$stats" >&2 || true

log "act runs took $(cat "$work/run1/seconds") s and $(cat "$work/run2/seconds") s; $((SECONDS - T0)) s in all"
if [[ $failures -gt 0 ]]; then
	printf 'FAIL: %d checks failed\n' "$failures"
	exit 1
fi
printf 'PASS: the Action under act: comment, summary, outputs and report (%d s)\n' "$((SECONDS - T0))"
