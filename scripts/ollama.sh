#!/usr/bin/env bash
# Installs, starts and stops a real Ollama server serving stories260K.gguf, so the engine
# adapter and the streaming client can be checked against a real engine (docs/real-engine.md).
#
#   scripts/ollama.sh install   # build Ollama v0.6.5 from the Go module proxy, once
#   scripts/ollama.sh start     # serve the model on 127.0.0.1, write $OLLAMA_STATE
#   scripts/ollama.sh stop      # stop the server named in $OLLAMA_STATE
#
# Environment: SLOGATE_CACHE (default ~/.cache/slogate), SLOGATE_MODEL (default
# ../shared/models/stories260K.gguf, relative to the repository root), OLLAMA_PORT (default: a
# free port), OLLAMA_NUM_PARALLEL (default 2), OLLAMA_NUM_THREAD (compute threads, default 1),
# OLLAMA_STATE (default /tmp/slogate-ollama.env),
# OLLAMA_START_TIMEOUT (seconds to wait for the server, default 60).
set -euo pipefail

OLLAMA_VERSION=0.6.5
MODEL_NAME=stories260k
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OLLAMA_CACHE=${SLOGATE_CACHE:-$HOME/.cache/slogate}/ollama-$OLLAMA_VERSION
OLLAMA_BIN=$OLLAMA_CACHE/bin/ollama
OLLAMA_STATE=${OLLAMA_STATE:-/tmp/slogate-ollama.env}
START_TIMEOUT=${OLLAMA_START_TIMEOUT:-60}

log() { printf 'ollama.sh: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# installed succeeds when the cached binary reports the pinned version. A build without the
# version ldflag reports 0.0.0, which must not count as installed.
installed() {
	[[ -x $OLLAMA_BIN ]] || return 1
	local v
	# --version also asks a server for its version; a closed port keeps that from
	# answering for the binary, so it prints "client version is X".
	v=$(OLLAMA_HOST=127.0.0.1:1 "$OLLAMA_BIN" --version 2>&1 || true)
	[[ $v == *"client version is $OLLAMA_VERSION"* ]]
}

cmd_install() {
	local t0=$SECONDS
	if installed; then
		log "ollama $OLLAMA_VERSION already in $OLLAMA_CACHE (0 s)"
		return 0
	fi
	command -v go >/dev/null || die "go is not on PATH"
	command -v gcc >/dev/null || command -v cc >/dev/null || die "a C compiler is needed (Ollama is a cgo build)"
	mkdir -p "$OLLAMA_CACHE/bin"
	log "building ollama $OLLAMA_VERSION into $OLLAMA_CACHE (a cgo build: minutes)"
	# GOFLAGS replaces, not extends, the user's flags: -mod=vendor or similar from the
	# caller's environment would break a module-proxy install.
	CGO_ENABLED=1 GOFLAGS=-buildvcs=false GOBIN=$OLLAMA_CACHE/bin \
		go install -ldflags "-X github.com/ollama/ollama/version.Version=$OLLAMA_VERSION" \
		"github.com/ollama/ollama@v$OLLAMA_VERSION"
	installed || die "built $OLLAMA_BIN but it does not report version $OLLAMA_VERSION: $("$OLLAMA_BIN" --version 2>&1 || true)"
	log "built ollama $OLLAMA_VERSION in $((SECONDS - t0)) s"
}

free_port() {
	# Binding port 0 lets the kernel pick; the port is released before ollama takes it, a
	# small race that a retry of start covers.
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
}

cmd_start() {
	installed || die "ollama $OLLAMA_VERSION is not installed: run $0 install"
	if [[ -f $OLLAMA_STATE ]]; then
		local old_pid
		old_pid=$(sed -n 's/^OLLAMA_PID=//p' "$OLLAMA_STATE")
		if [[ -n $old_pid ]] && kill -0 "$old_pid" 2>/dev/null; then
			die "a server from $OLLAMA_STATE is still running (pid $old_pid): run $0 stop first"
		fi
	fi
	local model=${SLOGATE_MODEL:-../shared/models/stories260K.gguf}
	[[ $model == /* ]] || model=$REPO_ROOT/$model
	[[ -r $model ]] || die "model not found: $model (set SLOGATE_MODEL)"

	local port=${OLLAMA_PORT:-$(free_port)}
	local host=127.0.0.1:$port
	local url=http://$host
	if curl -fsS --max-time 2 "$url/" >/dev/null 2>&1; then
		die "something already answers on $url: choose another OLLAMA_PORT"
	fi
	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/slogate-ollama.XXXXXX")
	local logf=$dir/serve.log
	local pid=""

	# Until start has finished, any failure stops the server and removes its files: a
	# half-started server would hold the port and the CPU of the next run.
	cleanup_failed_start() {
		local rc=$?
		trap - EXIT INT TERM
		if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
		if [[ -f $logf ]]; then
			log "server log (last 40 lines):"
			tail -n 40 "$logf" >&2 || true
		fi
		rm -rf "$dir"
		rm -f "$OLLAMA_STATE"
		exit $((rc == 0 ? 1 : rc))
	}
	trap cleanup_failed_start EXIT INT TERM

	mkdir -p "$dir/models" "$dir/model"
	# The shared model folder is read-only in CI; Modelfile paths are relative to the
	# Modelfile, so the GGUF sits beside it.
	cp "$model" "$dir/model/stories260K.gguf"
	# One compute thread by default: ggml's threads meet at a spinning barrier after every
	# graph node, and on a small, busy CI machine a descheduled thread stalls each barrier
	# for a time slice. Measured on 2 loaded cores: 2 threads 2.9 tokens/s, 1 thread 1,300.
	printf 'FROM ./stories260K.gguf\nPARAMETER num_ctx 2048\nPARAMETER num_thread %d\n' \
		"${OLLAMA_NUM_THREAD:-1}" >"$dir/model/Modelfile"

	OLLAMA_HOST=$host OLLAMA_MODELS=$dir/models OLLAMA_KEEP_ALIVE=-1 \
		OLLAMA_NUM_PARALLEL=${OLLAMA_NUM_PARALLEL:-2} OLLAMA_NOPRUNE=1 \
		nohup "$OLLAMA_BIN" serve >"$logf" 2>&1 </dev/null &
	pid=$!
	log "ollama serve pid $pid on $url (models in $dir/models, log $logf)"

	local deadline=$((SECONDS + START_TIMEOUT))
	until curl -fsS --max-time 2 "$url/api/version" >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || die "ollama serve exited before answering"
		((SECONDS < deadline)) || die "ollama serve did not answer $url/api/version within $START_TIMEOUT s"
		sleep 0.5
	done
	log "server answers: $(curl -fsS --max-time 5 "$url/api/version")"

	(cd "$dir/model" && OLLAMA_HOST=$host timeout 120 "$OLLAMA_BIN" create "$MODEL_NAME" -f Modelfile >"$dir/create.log" 2>&1) ||
		{
			cat "$dir/create.log" >&2
			die "ollama create $MODEL_NAME failed"
		}

	# One generation loads the model, so the first measured request does not pay for it.
	local t0=$SECONDS
	curl -fsS --max-time 120 "$url/api/generate" \
		-d "{\"model\":\"$MODEL_NAME\",\"prompt\":\"Once upon a time\",\"stream\":false,\"options\":{\"num_predict\":8}}" \
		>/dev/null || die "warm-up generation failed"
	log "model $MODEL_NAME loaded ($((SECONDS - t0)) s)"
	# With OLLAMA_PORT taken by another server, that server answers the checks above while
	# ours has exited on the failed bind.
	kill -0 "$pid" 2>/dev/null || die "ollama serve exited (is port $port taken by another server?)"

	printf 'OLLAMA_URL=%s\nOLLAMA_PID=%s\nOLLAMA_DIR=%s\nOLLAMA_LOG=%s\n' "$url" "$pid" "$dir" "$logf" >"$OLLAMA_STATE"
	trap - EXIT INT TERM
	log "state in $OLLAMA_STATE"
	cat "$OLLAMA_STATE"
}

cmd_stop() {
	if [[ ! -f $OLLAMA_STATE ]]; then
		log "no state file $OLLAMA_STATE: nothing to stop"
		return 0
	fi
	local pid dir
	pid=$(sed -n 's/^OLLAMA_PID=//p' "$OLLAMA_STATE")
	dir=$(sed -n 's/^OLLAMA_DIR=//p' "$OLLAMA_STATE")
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		local i
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "pid $pid still running after 10 s: sending SIGKILL"
			kill -9 "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
		fi
		log "stopped ollama pid $pid"
	else
		log "pid ${pid:-?} not running"
	fi
	# Only remove a folder this script made.
	if [[ -n $dir && $dir == */slogate-ollama.* && -d $dir ]]; then
		rm -rf "$dir"
	fi
	rm -f "$OLLAMA_STATE"
}

case ${1:-} in
install) cmd_install ;;
start) cmd_start ;;
stop) cmd_stop ;;
*)
	echo "usage: $0 install|start|stop" >&2
	exit 2
	;;
esac
