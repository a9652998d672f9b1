#!/usr/bin/env bash
# Builds, starts and stops a real llama.cpp llama-server serving stories260K.gguf, a second
# real engine beside Ollama (docs/real-engine.md). llama.cpp closes the connection after
# each streamed response, shares one KV cache across its slots and reports its context per
# slot, which is why slogate is checked against it.
#
#   scripts/llamacpp.sh build   # build llama-server from the llama.cpp source that ships
#                               # inside the npm package node-llama-cpp@3.22.1, once
#   scripts/llamacpp.sh start   # serve the model on 127.0.0.1, write $LLAMACPP_STATE
#   scripts/llamacpp.sh stop    # stop the server named in $LLAMACPP_STATE
#
# Environment: SLOGATE_CACHE (default ~/.cache/slogate), SLOGATE_MODEL (default
# ../shared/models/stories260K.gguf, relative to the repository root), LLAMACPP_PORT
# (default: a free port), LLAMACPP_PARALLEL (slots, -np; default 4; "auto" leaves -np out
# and lets the server choose), LLAMACPP_CTX (-c, the context of the whole server; default
# 2048), LLAMACPP_THREADS (-t; default 1), LLAMACPP_ALIAS (the model id the server lists;
# default stories260k), LLAMACPP_ARGS (more llama-server arguments),
# LLAMACPP_STATE (default /tmp/slogate-llamacpp.env), LLAMACPP_START_TIMEOUT (seconds to
# wait for /health, default 60), LLAMACPP_BUILD_JOBS (default 2), LLAMACPP_BUILD_DIR (the
# source and build tree while building, kept to resume an interrupted build; default
# $SLOGATE_CACHE/llama.cpp-node-llama-cpp-3.22.1/work).
set -euo pipefail

NLC_PACKAGE=node-llama-cpp
NLC_VERSION=3.22.1
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LLAMACPP_CACHE=${SLOGATE_CACHE:-$HOME/.cache/slogate}/llama.cpp-$NLC_PACKAGE-$NLC_VERSION
LLAMACPP_BIN=$LLAMACPP_CACHE/bin/llama-server
LLAMACPP_BUILD_DIR=${LLAMACPP_BUILD_DIR:-$LLAMACPP_CACHE/work}
LLAMACPP_STATE=${LLAMACPP_STATE:-/tmp/slogate-llamacpp.env}
START_TIMEOUT=${LLAMACPP_START_TIMEOUT:-60}

log() { printf 'llamacpp.sh: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# built succeeds when the cached binary runs and the build stamp names the pinned package.
# The stamp is written last, so a build interrupted while copying does not count.
built() {
	[[ -x $LLAMACPP_BIN && -f $LLAMACPP_CACHE/BUILD ]] || return 1
	grep -qx "package=$NLC_PACKAGE@$NLC_VERSION" "$LLAMACPP_CACHE/BUILD" || return 1
	"$LLAMACPP_BIN" --version >/dev/null 2>&1
}

cmd_build() {
	local t0=$SECONDS
	if built; then
		log "llama-server from $NLC_PACKAGE@$NLC_VERSION already in $LLAMACPP_CACHE (0 s)"
		return 0
	fi
	command -v npm >/dev/null || die "npm is not on PATH (the llama.cpp source ships in an npm package)"
	command -v git >/dev/null || die "git is not on PATH"
	command -v c++ >/dev/null || command -v g++ >/dev/null || die "a C++ compiler is needed"
	if ! command -v cmake >/dev/null; then
		# CI runs as root on a Debian machine: install it there rather than fail.
		if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
			log "cmake is not installed: installing Debian's package"
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake) >&2 ||
				die "apt-get install cmake failed"
		else
			die "cmake is not on PATH (apt-get install cmake)"
		fi
	fi
	# The source and build tree (about 300 MB) live under the cache until the binary is
	# built, then go: a build stopped part-way (a CI time limit, a session that ended)
	# resumes where it was on the next run instead of starting over, which on 2 busy cores
	# is the difference between minutes and an hour.
	local work=$LLAMACPP_BUILD_DIR
	mkdir -p "$work"
	if [[ $(cat "$work/PACKAGE" 2>/dev/null) != "$NLC_PACKAGE@$NLC_VERSION" || ! -d $work/src/.git ]]; then
		rm -rf "${work:?}/src" "${work:?}/build" "${work:?}/package" "$work"/*.tgz "$work/PACKAGE"
		log "fetching $NLC_PACKAGE@$NLC_VERSION (it carries llama.cpp as a git bundle)"
		(cd "$work" && npm pack --silent "$NLC_PACKAGE@$NLC_VERSION" >/dev/null) ||
			die "npm pack $NLC_PACKAGE@$NLC_VERSION failed"
		tar -xzf "$work/$NLC_PACKAGE-$NLC_VERSION.tgz" -C "$work"
		rm -f "$work/$NLC_PACKAGE-$NLC_VERSION.tgz"
		local bundle=$work/package/llama/gitRelease.bundle
		[[ -f $bundle ]] || die "$NLC_PACKAGE@$NLC_VERSION has no llama/gitRelease.bundle"
		git clone -q "$bundle" "$work/src" 2>/dev/null || die "git clone $bundle failed"
		echo "$NLC_PACKAGE@$NLC_VERSION" >"$work/PACKAGE"
	elif [[ -d $work/build ]]; then
		# A compile killed mid-write leaves a truncated object with a fresh mtime, which
		# make would take as done: the newest few objects (at most one a job) go.
		local n_objects
		n_objects=$(find "$work/build" -name '*.o' | wc -l)
		find "$work/build" -name '*.o' -printf '%T@ %p\n' | sort -rn | head -n $((2 * ${LLAMACPP_BUILD_JOBS:-2})) |
			cut -d' ' -f2- | xargs -r rm -f
		log "resuming the build in $work ($n_objects objects already compiled)"
	fi
	local tag
	tag=$(sed -n 's/.*"tag": *"\([^"]*\)".*/\1/p' "$work/package/llama/llama.cpp.info.json" 2>/dev/null || true)
	log "llama.cpp ${tag:-?} (commit $(git -C "$work/src" rev-parse --short HEAD)); configuring"
	# GGML_NATIVE=OFF: the cached binary must run on another CPU of the same family (it
	# still uses AVX2/FMA/F16C). Static libraries and no OpenMP: one file to cache, no
	# shared library beside it. CURL, OpenSSL and the web UI are off: nothing is downloaded
	# at build or run time, and the model is a local file.
	local cmake_args=(
		-S "$work/src" -B "$work/build"
		-DCMAKE_BUILD_TYPE=Release
		-DBUILD_SHARED_LIBS=OFF
		-DGGML_NATIVE=OFF
		-DGGML_OPENMP=OFF
		-DLLAMA_CURL=OFF
		-DLLAMA_OPENSSL=OFF
		-DLLAMA_BUILD_UI=OFF
		-DLLAMA_USE_PREBUILT_UI=OFF
		-DLLAMA_BUILD_TESTS=OFF
		-DLLAMA_BUILD_EXAMPLES=OFF
	)
	nice cmake "${cmake_args[@]}" >"$work/configure.log" 2>&1 || {
		tail -n 40 "$work/configure.log" >&2
		die "cmake configure failed"
	}
	log "building llama-server with -j${LLAMACPP_BUILD_JOBS:-2} (tens of minutes on 2 cores; an interrupted build resumes)"
	nice cmake --build "$work/build" --config Release --target llama-server -j "${LLAMACPP_BUILD_JOBS:-2}" \
		>"$work/build.log" 2>&1 || {
		tail -n 40 "$work/build.log" >&2
		die "building llama-server failed"
	}
	local out=$work/build/bin/llama-server
	[[ -x $out ]] || die "the build did not produce $out"
	mkdir -p "$LLAMACPP_CACHE/bin"
	rm -f "$LLAMACPP_CACHE/BUILD"
	cp "$out" "$LLAMACPP_BIN.tmp"
	mv -f "$LLAMACPP_BIN.tmp" "$LLAMACPP_BIN"
	"$LLAMACPP_BIN" --version >/dev/null 2>&1 || die "the built $LLAMACPP_BIN does not run: $("$LLAMACPP_BIN" --version 2>&1 | tail -n 3)"
	printf 'package=%s@%s\ntag=%s\ncommit=%s\nversion=%s\n' "$NLC_PACKAGE" "$NLC_VERSION" "${tag:-}" \
		"$(git -C "$work/src" rev-parse HEAD)" "$("$LLAMACPP_BIN" --version 2>&1 | grep -m1 version || true)" \
		>"$LLAMACPP_CACHE/BUILD"
	rm -rf "$work"
	log "built $LLAMACPP_BIN in $((SECONDS - t0)) s"
}

free_port() {
	# Binding port 0 lets the kernel pick; the port is released before llama-server takes
	# it, a small race that a retry of start covers.
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
}

cmd_start() {
	built || die "llama-server is not built: run $0 build"
	if [[ -f $LLAMACPP_STATE ]]; then
		local old_pid
		old_pid=$(sed -n 's/^LLAMACPP_PID=//p' "$LLAMACPP_STATE")
		if [[ -n $old_pid ]] && kill -0 "$old_pid" 2>/dev/null; then
			die "a server from $LLAMACPP_STATE is still running (pid $old_pid): run $0 stop first"
		fi
	fi
	local model=${SLOGATE_MODEL:-../shared/models/stories260K.gguf}
	[[ $model == /* ]] || model=$REPO_ROOT/$model
	[[ -r $model ]] || die "model not found: $model (set SLOGATE_MODEL)"

	local port=${LLAMACPP_PORT:-$(free_port)}
	local url=http://127.0.0.1:$port
	if curl -fsS --max-time 2 "$url/health" >/dev/null 2>&1; then
		die "something already answers on $url: choose another LLAMACPP_PORT"
	fi
	local parallel=${LLAMACPP_PARALLEL:-4}
	# One compute thread by default: ggml's threads meet at a spinning barrier after every
	# graph node, and on a small, busy CI machine a descheduled thread stalls each barrier
	# for a time slice (with 2 threads beside the client, a run slowed 200x).
	local args=(-m "$model" --host 127.0.0.1 --port "$port" -t "${LLAMACPP_THREADS:-1}"
		-c "${LLAMACPP_CTX:-2048}" --metrics --slots --alias "${LLAMACPP_ALIAS:-stories260k}")
	[[ $parallel == auto ]] || args+=(-np "$parallel")
	# shellcheck disable=SC2206
	[[ -z ${LLAMACPP_ARGS:-} ]] || args+=($LLAMACPP_ARGS)

	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/slogate-llamacpp.XXXXXX")
	local logf=$dir/server.log
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
		rm -f "$LLAMACPP_STATE"
		exit $((rc == 0 ? 1 : rc))
	}
	trap cleanup_failed_start EXIT INT TERM

	nohup "$LLAMACPP_BIN" "${args[@]}" >"$logf" 2>&1 </dev/null &
	pid=$!
	log "llama-server pid $pid on $url: ${args[*]} (log $logf)"

	# /health answers 503 while the model loads and 200 once the server takes requests.
	local deadline=$((SECONDS + START_TIMEOUT))
	until curl -fsS --max-time 2 "$url/health" >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || die "llama-server exited before answering"
		((SECONDS < deadline)) || die "llama-server did not answer $url/health within $START_TIMEOUT s"
		sleep 0.3
	done
	# With LLAMACPP_PORT taken by another server, that server answers the check above while
	# ours has exited on the failed bind.
	sleep 0.2
	kill -0 "$pid" 2>/dev/null || die "llama-server exited (is port $port taken by another server?)"
	log "server healthy: $(curl -fsS --max-time 5 "$url/health")"

	printf 'LLAMACPP_URL=%s\nLLAMACPP_PID=%s\nLLAMACPP_DIR=%s\nLLAMACPP_LOG=%s\nLLAMACPP_PARALLEL=%s\nLLAMACPP_CTX=%s\nLLAMACPP_BIN=%s\nLLAMACPP_MODEL=%s\n' \
		"$url" "$pid" "$dir" "$logf" "$parallel" "${LLAMACPP_CTX:-2048}" "$LLAMACPP_BIN" "$model" >"$LLAMACPP_STATE"
	trap - EXIT INT TERM
	log "state in $LLAMACPP_STATE"
	cat "$LLAMACPP_STATE"
}

cmd_stop() {
	if [[ ! -f $LLAMACPP_STATE ]]; then
		log "no state file $LLAMACPP_STATE: nothing to stop"
		return 0
	fi
	local pid dir
	pid=$(sed -n 's/^LLAMACPP_PID=//p' "$LLAMACPP_STATE")
	dir=$(sed -n 's/^LLAMACPP_DIR=//p' "$LLAMACPP_STATE")
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
		log "stopped llama-server pid $pid"
	else
		log "pid ${pid:-?} not running"
	fi
	# Only remove a folder this script made.
	if [[ -n $dir && $dir == */slogate-llamacpp.* && -d $dir ]]; then
		rm -rf "$dir"
	fi
	rm -f "$LLAMACPP_STATE"
}

case ${1:-} in
build) cmd_build ;;
start) cmd_start ;;
stop) cmd_stop ;;
*)
	echo "usage: $0 build|start|stop" >&2
	exit 2
	;;
esac
