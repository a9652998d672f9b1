#!/usr/bin/env bash
# Runs the Action (action.yml at the repository root) in a real runner implementation,
# nektos/act, on this host, as a GPU runner without Go would: the action downloads the
# release archive for this machine, checks it against SHA256SUMS, caches it in the runner's
# tool cache and runs `slogate ci`. It checks what a pull request would get from it: one
# sticky comment (created by the first run, updated in place by the second, a reviewer's
# look-alike left alone), the job summary, the step outputs and slogate-out/report.html.
# The engine is the built-in simulator, GitHub is a fake on loopback
# (testdata/action/fakegh) and so is the release server (testdata/action/fakerelease,
# serving what scripts/release.sh built); nothing leaves the machine. docs/action.md
# explains the act specifics.
#
#   scripts/action-test.sh
#
# Before act: the release archives (three platforms, SHA256SUMS, the stamped version), the
# install step's refusals (a missing asset, a missing SHA256SUMS, no release and no Go) and
# its source-build fallback, run directly; the Dockerfile where `docker info` answers.
# Then three act runs, each with Go removed from PATH: 1 downloads (once: the job's second
# use of the action finds the cache), 2 finds the cache and sends no request to the release
# server, 3 is served a tampered archive and must refuse it, naming the file, the expected
# and the actual SHA-256, with nothing run.
#
# Needs: Go, bash, coreutils (timeout, sha256sum), curl or wget, GNU tar, and the Go module
# proxy the first time: act is built from it (go install github.com/nektos/act@v0.2.89,
# 2-4 minutes on 2 cores) and cached.
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
VERSION=v0.0.0-actiontest          # the release the fake server serves
TAMPERED=v0.0.1-actiontest-tampered # a release whose archive was altered after SHA256SUMS

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
GOFLAGS=-buildvcs=false timeout 300 go build -o "$work/bin/fakerelease" ./testdata/action/fakerelease ||
	die "building testdata/action/fakerelease failed"
GOFLAGS=-buildvcs=false GOWORK=off CGO_ENABLED=0 timeout 300 go build -o "$work/bin/slogate" ./cmd/slogate ||
	die "building slogate (for the simulator) failed"
log "built fakegh, fakerelease and slogate in $((SECONDS - t)) s"

# ---- the release archives ----------------------------------------------------------------

if command -v sha256sum >/dev/null; then
	sha256() { sha256sum "$1" | cut -d' ' -f1; }
else
	sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
fi

rel=$work/release # served as the release server's root: one folder per tag
t=$SECONDS
waited timeout 900 bash scripts/release.sh -v "$VERSION" -o "$rel/$VERSION" 2>"$work/release.log" ||
	die "scripts/release.sh failed: $(tail -5 "$work/release.log")"
log "built the release archives in $((SECONDS - t)) s"
bare=${VERSION#v}
head_commit=$(git rev-parse HEAD 2>/dev/null || true)
host_os=$(go env GOOS)
host_arch=$(go env GOARCH)
for p in linux/amd64 linux/arm64 darwin/arm64; do
	a=slogate_${bare}_${p%/*}_${p#*/}.tar.gz
	check "release: $a is listed in SHA256SUMS with its hash" \
		grep -qxF "$(sha256 "$rel/$VERSION/$a" 2>/dev/null)  $a" "$rel/$VERSION/SHA256SUMS"
	x=$work/unpacked/${p%/*}_${p#*/}
	mkdir -p "$x"
	tar -xzf "$rel/$VERSION/$a" -C "$x" 2>/dev/null || true
	check "release: $a unpacks to slogate and README.md" test -f "$x/slogate" -a -f "$x/README.md"
	# Every binary: its platform, static and -trimpath, from its build info.
	info=$(go version -m "$x/slogate" 2>/dev/null || true)
	missing=()
	for want in "GOOS=${p%/*}" "GOARCH=${p#*/}" CGO_ENABLED=0 -trimpath=true; do
		grep -qF -- "build	$want" <<<"$info" || missing+=("$want")
	done
	check "release: $a holds a static $p binary built with -trimpath${missing[*]:+; build info lacks ${missing[*]}}" \
		test ${#missing[@]} -eq 0
	if [[ $p == "$host_os/$host_arch" ]]; then
		v=$("$x/slogate" version 2>&1 || true)
		check "release: $a runs and prints the stamped version, commit and date ('$v')" \
			grep -qE "^slogate $VERSION \(commit ${head_commit:-unknown}, built [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z, " <<<"$v"
	else
		check "release: $a carries the stamped version (it cannot run here)" grep -qaF -- "$VERSION" "$x/slogate"
	fi
done
host_asset=slogate_${bare}_${host_os}_${host_arch}.tar.gz
[[ -f $rel/$VERSION/$host_asset ]] || die "no release archive for this machine ($host_os/$host_arch): the act runs need one"
# Reproducible: the same commit builds the same bytes (a mirror can rebuild and compare).
waited timeout 600 bash scripts/release.sh -v "$VERSION" -p "$host_os/$host_arch" -o "$work/rebuilt" 2>>"$work/release.log" || true
check "release: a second build of $host_asset gives the same bytes" \
	test "$(sha256 "$work/rebuilt/$host_asset" 2>/dev/null)" = "$(sha256 "$rel/$VERSION/$host_asset")"

# The tampered release: this machine's archive altered after SHA256SUMS was written.
mkdir -p "$rel/$TAMPERED"
tampered_asset=slogate_${TAMPERED#v}_${host_os}_${host_arch}.tar.gz
cp "$rel/$VERSION/$host_asset" "$rel/$TAMPERED/$tampered_asset"
tampered_expected=$(sha256 "$rel/$TAMPERED/$tampered_asset")
printf '%s  %s\n' "$tampered_expected" "$tampered_asset" >"$rel/$TAMPERED/SHA256SUMS"
printf 'tampered' >>"$rel/$TAMPERED/$tampered_asset"
tampered_actual=$(sha256 "$rel/$TAMPERED/$tampered_asset")
# A release whose SHA256SUMS names this machine's archive but that lacks the file.
MISSING=v0.0.2-actiontest-missing
mkdir -p "$rel/$MISSING"
missing_asset=slogate_${MISSING#v}_${host_os}_${host_arch}.tar.gz
printf '%s  %s\n' "$(sha256 "$rel/$VERSION/$host_asset")" "$missing_asset" >"$rel/$MISSING/SHA256SUMS"

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

rel_state=$work/release-server
"$work/bin/fakerelease" -dir "$rel" -state "$rel_state" 2>"$work/fakerelease.log" &
pids+=($!)
wait_for "$rel_state/addr" . || die "the fake release server did not start: $(cat "$work/fakerelease.log")"
release_url=http://$(cat "$rel_state/addr")
log "fake release server at $release_url"
# downloads: requests the release server has answered so far.
downloads() { wc -l <"$rel_state/requests.log" | tr -d ' '; }

# path_without_go: PATH less every directory holding a go executable.
path_without_go() {
	local out="" d
	local IFS=:
	for d in $PATH; do
		[[ -n $d && ! -x $d/go ]] && out=${out:+$out:}$d
	done
	printf '%s' "$out"
}
nogo_path=$(path_without_go)
env PATH="$nogo_path" bash -c 'command -v go' >/dev/null 2>&1 && die "go is still on PATH after removing its directories"

# ---- the install step, run directly -----------------------------------------------------

# install NAME VERSION PATH [ENV...]: runs scripts/action-install.sh as action.yml does,
# with a tool cache and outputs of its own; status in $work/install-NAME/rc.
install() {
	local v=$2 path=$3 d=$work/install-$1
	shift 3
	mkdir -p "$d/tmp"
	local rc=0
	env PATH="$path" INPUT_VERSION="$v" "INPUT_RELEASE-URL=$release_url" SLOGATE_ACTION_REF= \
		SLOGATE_ACTION_PATH="$REPO_ROOT" RUNNER_TOOL_CACHE="$d/tool-cache" RUNNER_TEMP="$d/tmp" \
		GITHUB_OUTPUT="$d/outputs" "$@" timeout 300 bash scripts/action-install.sh >"$d/log" 2>&1 || rc=$?
	echo "$rc" >"$d/rc"
}
in_log() { grep -qF -- "$2" "$work/install-$1/log"; }

install missing "$MISSING" "$nogo_path"
check "install: a missing asset fails (exit $(cat "$work/install-missing/rc")) naming the file, the expected and the actual hash" \
	test "$(cat "$work/install-missing/rc")" = 1
in_log missing "::error title=slogate install::$missing_asset: missing from the $MISSING release: $release_url/$MISSING/$missing_asset: HTTP 404 (expected sha256: $(sha256 "$rel/$VERSION/$host_asset"); actual: nothing downloaded)" ||
	fail "install: the missing-asset error is not the expected one: $(cat "$work/install-missing/log")"
install nosums v0.0.3-actiontest-absent "$nogo_path"
check "install: a release without SHA256SUMS fails (exit $(cat "$work/install-nosums/rc")) naming SHA256SUMS and its URL" \
	test "$(cat "$work/install-nosums/rc")" = 1
in_log nosums "SHA256SUMS of v0.0.3-actiontest-absent: $release_url/v0.0.3-actiontest-absent/SHA256SUMS: HTTP 404" ||
	fail "install: the missing-SHA256SUMS error is not the expected one: $(cat "$work/install-nosums/log")"
install badversion "1.2" "$nogo_path"
check "install: input version '1.2' is refused as bad input (exit $(cat "$work/install-badversion/rc"))" \
	test "$(cat "$work/install-badversion/rc")" = 2
install nogo "" "$nogo_path" SLOGATE_ACTION_REF=main
check "install: no release and no Go: exit 2 naming the input version ($(cat "$work/install-nogo/rc"))" \
	test "$(cat "$work/install-nogo/rc")" = 2
in_log nogo 'is not a release and no go is on PATH' || fail "install: the no-Go error is not the expected one: $(cat "$work/install-nogo/log")"
install source "" "$PATH" SLOGATE_ACTION_REF=main
check "install: no release and Go on PATH: built from source (exit $(cat "$work/install-source/rc"), $(sed -n 's/^source=//p' "$work/install-source/outputs" 2>/dev/null))" \
	grep -qx 'source=build' "$work/install-source/outputs"
in_log source 'slogate main (commit unknown' || fail "install: the source build does not print version main: $(tail -3 "$work/install-source/log")"
check "install: none of these downloaded an archive ($(grep -c 'tar.gz 200$' "$rel_state/requests.log" || true) archives served)" \
	test "$(grep -c 'tar.gz 200$' "$rel_state/requests.log" || true)" = 0
# The version from the action's ref (uses: slogate/slogate@v0.0.0-actiontest), and from
# .slogate-version on the commit a major tag points to (uses: slogate/slogate@v0).
install ref "" "$nogo_path" SLOGATE_ACTION_REF="$VERSION"
check "install: the action's ref $VERSION is downloaded without the input version ($(tr '\n' ' ' <"$work/install-ref/outputs" 2>/dev/null))" \
	grep -qx "version=$VERSION" "$work/install-ref/outputs"
mkdir -p "$work/major-tag"
echo "$VERSION" >"$work/major-tag/.slogate-version"
install major "" "$nogo_path" SLOGATE_ACTION_REF=v0 SLOGATE_ACTION_PATH="$work/major-tag"
check "install: the major tag v0 installs its .slogate-version $VERSION ($(tr '\n' ' ' <"$work/install-major/outputs" 2>/dev/null))" \
	grep -qx "version=$VERSION" "$work/install-major/outputs"
check "install: and that binary runs" in_log major "slogate $VERSION (commit"

# ---- the container image ---------------------------------------------------------------

if ! command -v docker >/dev/null 2>&1; then
	printf 'SKIP: the Docker build (no docker on PATH)\n'
elif ! docker_err=$(docker info 2>&1 >/dev/null); then
	printf 'SKIP: the Docker build (docker info failed: %s)\n' "$(tr '\n' ' ' <<<"$docker_err" | cut -c1-200)"
else
	tag=slogate-action-test:$RANDOM$RANDOM
	if waited timeout 900 docker build -q --build-arg VERSION="$VERSION" -t "$tag" . >"$work/docker.log" 2>&1; then
		pass "the Docker image builds"
		v=$(docker run --rm "$tag" version 2>&1 || true)
		check "the image runs slogate $VERSION ('$v')" grep -q "^slogate $VERSION " <<<"$v"
		u=$(docker image inspect -f '{{.Config.User}}' "$tag" 2>/dev/null || true)
		check "the image runs as a non-root user ('$u')" test -n "$u" -a "$u" != root -a "$u" != 0 -a "${u%%:*}" != 0
		docker image rm -f "$tag" >/dev/null 2>&1 || true
	else
		fail "the Docker image does not build: $(tail -5 "$work/docker.log")"
	fi
fi

# ---- act --------------------------------------------------------------------------------

# act_workflow WORKFLOW CAP [ACT ARGS...]: runs WORKFLOW under act on this host with Go
# removed from PATH, against the fake GitHub API, the simulator and the fake release
# server, captures to CAP and its log to CAP/act.json; returns act's exit status.
act_workflow() {
	local wf=$1 cap=$2
	shift 2
	# -P self-hosted=-self-hosted: the job's steps run on this host, no container engine.
	# --action-cache-path: the runner's tool cache is act-cache/tool_cache, kept across runs.
	# The empty env, secret, var and input files keep a developer's .env or .secrets out.
	# --json: act logs each step's job summary there (fakegh summary extracts it).
	waited env PATH="$nogo_path" ACT_DISABLE_VERSION_CHECK=1 \
		timeout --kill-after=10 "$RUN_TIMEOUT" "$ACT_BIN" pull_request --json \
		-W "$wf" \
		-e testdata/action/pull_request.json \
		-P self-hosted=-self-hosted \
		--action-cache-path "$work/act-cache" \
		--no-cache-server \
		--env-file /dev/null --secret-file /dev/null --var-file /dev/null --input-file /dev/null \
		-s "GITHUB_TOKEN=$token" \
		--env "GITHUB_API_URL=$api_url" \
		--env "GITHUB_REPOSITORY=$REPO_NAME" \
		--env "GITHUB_REF=refs/pull/$PR_NUMBER/merge" \
		--env "SLOGATE_TEST_TARGET=$sim_url" \
		--env "SLOGATE_TEST_CAPTURE=$cap" \
		--env "SLOGATE_TEST_RELEASE_URL=$release_url" \
		"$@" >"$cap/act.json" 2>&1
}

# run_act N VERSION: runs the workflow once with Go removed from PATH and the action
# pointed at release VERSION on the fake release server; captures go to $work/runN.
run_act() {
	local n=$1 version=$2 cap=$work/run$1
	mkdir -p "$cap"
	local t=$SECONDS rc=0
	act_workflow testdata/action/gate.yml "$cap" --env "SLOGATE_TEST_VERSION=$version" || rc=$?
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
		check "run $n: verdict '$verdict' passes with the default fail-on: inconclusive (step $outcome, act exit $rc)" \
			test "$outcome" = success -a "$rc" = 0
		;;
	inconclusive | incomparable | fail | error)
		check "run $n: verdict '$verdict' fails the step with the default fail-on: inconclusive (step $outcome)" \
			test "$outcome" = failure
		;;
	*)
		fail "run $n: output verdict is '$verdict'; want one of pass, improved, warn, inconclusive, incomparable, fail, error"
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

# step_seconds N STEPID...: how long a step of run N took, from act's log (executionTime,
# nanoseconds); STEPID is act's path of the step, e.g. '"baseline"' or '"baseline","install"'.
step_seconds() {
	local id
	id=$(
		IFS=,
		echo "${*:2}"
	)
	grep -F "\"stepID\":[$id]," "$work/run$1/act.json" | grep -F '"stepResult"' | grep -F '"stage":"Main"' |
		sed -n 's/.*"executionTime":\([0-9]*\).*/\1/p' | head -1 | awk '{ printf "%.2f", $1 / 1e9 }'
}
# requests_since N: the release server's requests after its first N, one a line.
requests_since() { tail -n +"$(($1 + 1))" "$rel_state/requests.log"; }

# Run 1: Go hidden, an empty tool cache: the first use of the action downloads, the
# second (the gate step of the same job) finds the cache.
r0=$(downloads)
run_act 1 "$VERSION"
reqs=$(requests_since "$r0")
check "run 1: the action downloaded SHA256SUMS and $host_asset once each ($(tr '\n' ';' <<<"$reqs"))" \
	test "$(grep -c " /$VERSION/SHA256SUMS 200$" <<<"$reqs")" = 1 -a "$(grep -c " /$VERSION/$host_asset 200$" <<<"$reqs")" = 1 -a "$(wc -l <<<"$reqs")" = 2
check "run 1: the archive was verified against SHA256SUMS" grep -qF "$host_asset: sha256 $(sha256 "$rel/$VERSION/$host_asset") matches SHA256SUMS" "$work/run1/act.json"
check "run 1: the binary is in the tool cache (act-cache/tool_cache/slogate/$bare/x64)" \
	test -x "$work/act-cache/tool_cache/slogate/$bare/$([[ $host_arch == amd64 ]] && echo x64 || echo "$host_arch")/slogate"
check "run 1: the job's second use of the action ran the cached binary" grep -qF "slogate: $VERSION (input version) from the tool cache" "$work/run1/act.json"
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

# Run 2: the next job on this runner: the tool cache has the binary, nothing is downloaded;
# the comment must be updated.
before=$failures
r0=$(downloads)
run_act 2 "$VERSION"
check "run 2: no request reached the release server ($(requests_since "$r0" | tr '\n' ';'))" test "$(downloads)" = "$r0"
check_run 2
check "run 2: the comment was updated in place (creates=$(gh creates), updates=$(gh updates))" \
	test "$(gh creates)" = 1 -a "$(gh updates)" = 1
check "run 2: still exactly one sticky comment ($(gh sticky_comments))" test "$(gh sticky_comments)" = 1
check "run 2: the comment URL did not change" test "$(output 2 comment-url)" = "$url1"
check "run 2: the look-alike comment was left alone (edited: $(gh lookalikes_edited))" \
	test "$(gh lookalikes)" = 1 -a "$(gh lookalikes_edited)" = 0
[[ $failures -eq $before ]] || show_failure_context "$work/run2"

# Run 3: a release whose archive does not match its SHA256SUMS: refused, nothing runs.
before=$failures
calls0=$(gh calls)
run_act 3 "$TAMPERED"
check "run 3: the job failed (act exit $(cat "$work/run3/rc"), first step $(output 3 baseline-outcome))" \
	test "$(cat "$work/run3/rc")" != 0 -a "$(output 3 baseline-outcome)" = failure
check "run 3: the error names $tampered_asset, the expected and the actual SHA-256" \
	grep -qF "$tampered_asset: checksum mismatch: expected sha256 $tampered_expected (SHA256SUMS of $TAMPERED, $release_url/$TAMPERED/SHA256SUMS), actual $tampered_actual; the archive is refused and nothing runs" "$work/run3/act.json"
check "run 3: slogate did not run (no verdict '$(output 3 verdict)', no slogate-out/, gate step $(output 3 outcome))" \
	test -z "$(output 3 verdict)" -a -z "$(output 3 baseline-verdict)" -a ! -e "$work/run3/slogate-out" -a "$(output 3 outcome)" != success
check "run 3: no GitHub call was made (calls: $calls0 before, $(gh calls) after)" test "$(gh calls)" = "$calls0"
check "run 3: nothing was cached for $TAMPERED" test ! -e "$work/act-cache/tool_cache/slogate/${TAMPERED#v}"
[[ $failures -eq $before ]] || show_failure_context "$work/run3"

# Run 4: the sharded workflow (testdata/action/scale-out.yml, the jobs of
# examples/workflows/scale-out.yml): a plan job sets the start time, a matrix of three shard
# jobs in mode run each sends one shard anchored to it and uploads its records, and the
# fan-in job merges them, gates the merged run and updates the one sticky comment.
before=$failures
cap=$work/run4
mkdir -p "$cap" "$work/artifacts"
creates0=$(gh creates) updates0=$(gh updates)
# run4: the sharded workflow under act, its log in $cap/act.json, its exit status in rc.
run4() {
	t=$SECONDS rc=0
	rm -f "$cap/outputs.env"
	# --concurrent-jobs 3: the three shards run at once, as on three runners.
	act_workflow testdata/action/scale-out.yml "$cap" \
		--concurrent-jobs 3 \
		--local-repository "actions/upload-artifact@v4=$REPO_ROOT/testdata/action/upload-artifact-standin" \
		--local-repository "actions/download-artifact@v4=$REPO_ROOT/testdata/action/download-artifact-standin" \
		--env "SLOGATE_TEST_ARTIFACTS=$work/artifacts" \
		--env "SLOGATE_TEST_START_DELAY=${SLOGATE_ACTION_TEST_START_DELAY:-60} seconds" \
		--env "SLOGATE_TEST_VERSION=$VERSION" || rc=$?
	log "act run 4 (sharded): exit $rc in $((SECONDS - t)) s (log: $cap/act.json)"
}
run4
# Three shards and the e2e suite share two cores here: a shard's wake-up at the common
# start came late past the 100 ms bound (101 ms once), in the first sharded run of two
# CI runs in a row, and the gate rightly refused the merged run. That refusal says the
# machine was too busy, not that the Action is wrong: the sharded run goes again, at
# most twice more, and the last is checked.
for again in 1 2; do
	[[ "$(sed -n 's/^verdict=//p' "$cap/outputs.env" 2>/dev/null)" == error ]] && grep -q 'opened its window' "$cap/act.json" || break
	log "run 4: a shard opened its window past the bound (a busy machine): again ($again of at most 2)"
	run4
done
[[ $rc -eq 124 || $rc -eq 137 ]] && fail "run 4: act did not finish within ${RUN_TIMEOUT}s"
for i in 1 2 3; do
	check "run 4: shard job $i uploaded its record" test -s "$work/artifacts/slogate-shard-$i/action-smoke.json"
	check "run 4: shard $i/3 is in its record" grep -q "\"shard\": \"$i/3\"" "$work/artifacts/slogate-shard-$i/action-smoke.json"
done
merged=$cap/slogate-out/action-smoke.json
check "run 4: the fan-in wrote the merged record" test -s "$merged"
check "run 4: the merged record keeps its 3 shards and the common start" \
	test "$(grep -oE '"shard": ?"[123]/3"' "$merged" 2>/dev/null | sort -u | wc -l)" = 3 -a "$(grep -oE '"start_at": ?"' "$merged" 2>/dev/null | wc -l)" -ge 4
v4=$(sed -n 's/^verdict=//p' "$cap/outputs.env" 2>/dev/null)
check "run 4: the merged run was judged (verdict '$v4')" test -n "$v4" -a "$v4" != error -a "$v4" != incomparable -a "$v4" != no_baseline
check "run 4: the one sticky comment was updated, none created (creates $creates0 -> $(gh creates), updates $updates0 -> $(gh updates))" \
	test "$(gh creates)" = "$creates0" -a "$(gh updates)" -gt "$updates0" -a "$(gh sticky_comments)" = 1
[[ $failures -eq $before ]] || show_failure_context "$cap"

stats=$("$work/bin/fakegh" stats -state "$gh_state")
check "every GitHub call carried the token and was one the fake knows ($(grep -E '^(unauthorized|unexpected)=' <<<"$stats" | tr '\n' ' '))" \
	test "$(gh unauthorized)" = 0 -a "$(gh unexpected)" = 0
grep '^#' <<<"$stats" >&2 || true

log "act runs took $(cat "$work/run1/seconds") s, $(cat "$work/run2/seconds") s and $(cat "$work/run3/seconds") s; $((SECONDS - T0)) s in all"
# The first use of the action in a job: its install step and the whole step (install and
# slogate ci against the simulator), cold (download) and warm (tool cache).
log "first action step, run 1 (download): install $(step_seconds 1 '"baseline"' '"install"') s, step $(step_seconds 1 '"baseline"') s"
log "first action step, run 2 (cached):   install $(step_seconds 2 '"baseline"' '"install"') s, step $(step_seconds 2 '"baseline"') s"
if [[ $failures -gt 0 ]]; then
	printf 'FAIL: %d checks failed\n' "$failures"
	exit 1
fi
printf 'PASS: the Action under act: comment, summary, outputs and report (%d s)\n' "$((SECONDS - T0))"
