#!/usr/bin/env bash
# The real-engine checks (docs/real-engine.md): builds Ollama v0.6.5 once (cached), serves
# ../shared/models/stories260K.gguf on loopback, runs the OllamaReal tests of engine/ (the
# adapter and the streaming client) and then of cli/ (run, baseline update, gate and ci
# against the real server, then the failure paths, the last of which kills the server),
# and stops the server whatever happened. Prints PASS or FAIL last; exits non-zero on
# failure.
#
#   scripts/real-engine-test.sh
#
# Environment: SLOGATE_CACHE, SLOGATE_MODEL, OLLAMA_NUM_PARALLEL (default 2) and
# OLLAMA_NUM_THREAD, as scripts/ollama.sh reads them; REAL_ENGINE_INSTALL_TIMEOUT (seconds
# for a first build, default 900) and REAL_ENGINE_TEST_TIMEOUT (seconds for each package's
# tests, default 420).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
INSTALL_TIMEOUT=${REAL_ENGINE_INSTALL_TIMEOUT:-900}
TEST_TIMEOUT=${REAL_ENGINE_TEST_TIMEOUT:-420}

t0=$SECONDS
log() { printf 'real-engine-test: %s\n' "$*" >&2; }

# A state file of its own, so that a developer's server started with scripts/ollama.sh
# (state in /tmp/slogate-ollama.env) is neither refused nor stopped by this run.
work=$(mktemp -d "${TMPDIR:-/tmp}/slogate-real-engine.XXXXXX")
export OLLAMA_STATE=$work/ollama.env
export OLLAMA_NUM_PARALLEL=${OLLAMA_NUM_PARALLEL:-2}
runners=""
phase=install

# children prints the pids whose parent is $1.
children() {
	local f stat ppid
	for f in /proc/[0-9]*/stat; do
		{ stat=$(<"$f"); } 2>/dev/null || continue
		# pid (comm) state ppid ...: comm may hold spaces and parentheses.
		stat=${stat##*) }
		read -r _ ppid _ <<<"$stat"
		if [[ $ppid == "$1" ]]; then
			f=${f#/proc/}
			echo "${f%/stat}"
		fi
	done
}

finish() {
	local rc=$?
	trap - EXIT INT TERM
	if ((rc != 0)) && [[ -f $OLLAMA_STATE ]]; then
		local slog
		slog=$(sed -n 's/^OLLAMA_LOG=//p' "$OLLAMA_STATE")
		if [[ -n $slog && -f $slog ]]; then
			log "server log (last 30 lines):"
			tail -n 30 "$slog" >&2 || true
		fi
	fi
	scripts/ollama.sh stop || true
	# The model runner is a child of the server: a server killed by the test (or by a
	# crash) leaves it behind, holding memory. Only the runners this run started are
	# stopped, checked by their command line in case a pid was reused.
	local p
	for p in $runners; do
		if [[ -r /proc/$p/cmdline ]] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -q "ollama runner"; then
			log "stopping the server's leftover model runner (pid $p)"
			kill "$p" 2>/dev/null || true
		fi
	done
	rm -rf "$work"
	if ((rc == 0)); then
		log "PASS in $((SECONDS - t0)) s"
		echo "real-engine-test: PASS"
	else
		log "FAIL (exit $rc, during $phase) after $((SECONDS - t0)) s"
		echo "real-engine-test: FAIL"
	fi
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t=$SECONDS
timeout "$INSTALL_TIMEOUT" scripts/ollama.sh install
log "install: $((SECONDS - t)) s"

phase=start
t=$SECONDS
scripts/ollama.sh start >/dev/null
# shellcheck disable=SC1090
. "$OLLAMA_STATE"
runners=$(children "$OLLAMA_PID")
log "start: $((SECONDS - t)) s (server pid $OLLAMA_PID, runner pids ${runners:-none})"

export SLOGATE_OLLAMA_URL=$OLLAMA_URL
export SLOGATE_OLLAMA_PID=$OLLAMA_PID
export SLOGATE_OLLAMA_LOG=$OLLAMA_LOG
export SLOGATE_OLLAMA_PARALLEL=$OLLAMA_NUM_PARALLEL

# One package at a time, engine/ first: the last cli test kills the server.
for pkg in ./engine/ ./cli/; do
	phase="tests of $pkg"
	t=$SECONDS
	timeout --kill-after=15 $((TEST_TIMEOUT + 120)) \
		go test -race -count=1 -timeout "${TEST_TIMEOUT}s" -run 'OllamaReal' -v "$pkg"
	log "tests of $pkg: $((SECONDS - t)) s"
done
phase=stop
