#!/usr/bin/env bash
# The llama.cpp checks (docs/real-engine.md): builds llama-server once (cached), then, for
# each server configuration, serves ../shared/models/stories260K.gguf on loopback, runs the
# LlamaCppReal tests of engine/ (the adapter) and of cli/ (a workload over the slot context
# refused before sending; two cold runs; token counts against the server's counters; KV
# capacity; baseline update and gate; 200 back-to-back requests), and stops the server
# whatever happened. The configurations: -np 4 -c 2048 (4 slots of 512 tokens) and -c 2048
# without -np (4 slots sharing one 2,048-token cache). Prints the measured figures, any
# PENDING check, and PASS or FAIL last; exits non-zero on failure.
#
#   scripts/llamacpp-test.sh
#
# Environment: SLOGATE_CACHE and SLOGATE_MODEL, as scripts/llamacpp.sh reads them;
# LLAMACPP_CONFIGS (default "4 auto": the -np values to test, "auto" for none);
# LLAMACPP_PENDING (checks to log instead of fail, e.g. "cold closed-connection" while
# bisecting; default empty: every check counts);
# LLAMACPP_BUILD_TIMEOUT (seconds for a first build, default 3600) and
# LLAMACPP_TEST_TIMEOUT (seconds for each package's tests, default 420).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
BUILD_TIMEOUT=${LLAMACPP_BUILD_TIMEOUT:-3600}
TEST_TIMEOUT=${LLAMACPP_TEST_TIMEOUT:-420}
CONFIGS=${LLAMACPP_CONFIGS:-4 auto}
export SLOGATE_LLAMACPP_PENDING=${LLAMACPP_PENDING-}

t0=$SECONDS
log() { printf 'llamacpp-test: %s\n' "$*" >&2; }

# A state file of its own, so that a developer's server started with scripts/llamacpp.sh
# (state in /tmp/slogate-llamacpp.env) is neither refused nor stopped by this run.
work=$(mktemp -d "${TMPDIR:-/tmp}/slogate-llamacpp-test.XXXXXX")
export LLAMACPP_STATE=$work/llamacpp.env
phase=build

finish() {
	local rc=$?
	trap - EXIT INT TERM
	if ((rc != 0)) && [[ -f $LLAMACPP_STATE ]]; then
		local slog
		slog=$(sed -n 's/^LLAMACPP_LOG=//p' "$LLAMACPP_STATE")
		if [[ -n $slog && -f $slog ]]; then
			log "server log (last 30 lines):"
			tail -n 30 "$slog" >&2 || true
		fi
	fi
	scripts/llamacpp.sh stop || true
	if [[ -f $work/test.log ]]; then
		log "measured:"
		grep -ho 'MEASURED.*' "$work"/test*.log >&2 || true
		grep -ho 'PENDING check.*' "$work"/test*.log >&2 || true
	fi
	rm -rf "$work"
	if ((rc == 0)); then
		log "PASS in $((SECONDS - t0)) s"
		echo "llamacpp-test: PASS"
	else
		log "FAIL (exit $rc, during $phase) after $((SECONDS - t0)) s"
		echo "llamacpp-test: FAIL"
	fi
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t=$SECONDS
timeout "$BUILD_TIMEOUT" scripts/llamacpp.sh build
log "build: $((SECONDS - t)) s"

for np in $CONFIGS; do
	phase="start (-np $np)"
	t=$SECONDS
	LLAMACPP_PARALLEL=$np LLAMACPP_CTX=2048 scripts/llamacpp.sh start >/dev/null
	# shellcheck disable=SC1090
	. "$LLAMACPP_STATE"
	log "start -np $np: $((SECONDS - t)) s (server pid $LLAMACPP_PID, $LLAMACPP_URL)"
	export SLOGATE_LLAMACPP_URL=$LLAMACPP_URL SLOGATE_LLAMACPP_PARALLEL=$np SLOGATE_LLAMACPP_CTX=2048
	# The binary and the model, for the check that starts a server of its own (target.start).
	export SLOGATE_LLAMACPP_BIN=$LLAMACPP_BIN SLOGATE_LLAMACPP_MODEL=$LLAMACPP_MODEL
	for pkg in ./engine/ ./cli/; do
		phase="tests of $pkg (-np $np)"
		t=$SECONDS
		timeout --kill-after=15 $((TEST_TIMEOUT + 120)) \
			go test -race -count=1 -timeout "${TEST_TIMEOUT}s" -run 'LlamaCppReal' -v "$pkg" 2>&1 |
			sed "s/MEASURED /MEASURED (-np $np) /; s/PENDING check /PENDING check (-np $np) /" |
			tee -a "$work/test.log"
		log "tests of $pkg (-np $np): $((SECONDS - t)) s"
	done
	phase="stop (-np $np)"
	scripts/llamacpp.sh stop
done
phase=done
