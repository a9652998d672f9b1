#!/usr/bin/env bash
# Keeps the job summary of an act run for scripts/action-test.sh.
#
# act gives every step the same GITHUB_STEP_SUMMARY file and empties it before each step,
# and deletes it with the job: what a step wrote is gone before any later step, or the
# script, could read it. `start` replaces the file with a FIFO and drains it into
# $SLOGATE_TEST_CAPTURE/summary.md from a background reader, so every step's summary is
# appended there (act's emptying writes nothing); `stop` ends the reader and puts a plain
# file back. scripts/action-test.sh also kills the reader's process group on exit, in case
# `stop` never ran.
set -euo pipefail
cap=${SLOGATE_TEST_CAPTURE:?SLOGATE_TEST_CAPTURE is not set}
pidfile=$cap/summary-reader.pid

case ${1:-} in
start)
	: "${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY is not set}"
	: >"$cap/summary.md"
	rm -f "$GITHUB_STEP_SUMMARY"
	mkfifo "$GITHUB_STEP_SUMMARY"
	# setsid: its own process group, so that the reader and a cat blocked in open() die
	# together. The loop ends when the FIFO is gone (act removes it with the job).
	setsid bash -c 'while [[ -p $1 ]]; do cat "$1" >>"$2"; done' _ "$GITHUB_STEP_SUMMARY" "$cap/summary.md" \
		</dev/null >/dev/null 2>&1 &
	echo $! >"$pidfile"
	;;
stop)
	# Give the reader a moment to append what the last writer left in the pipe.
	sleep 0.5
	if [[ -f $pidfile ]]; then
		kill -- "-$(cat "$pidfile")" 2>/dev/null || true
		rm -f "$pidfile"
	fi
	# A plain file again: act empties it before any later step (a post step), and opening
	# a FIFO without a reader would block act for good.
	if [[ -n ${GITHUB_STEP_SUMMARY:-} && -p $GITHUB_STEP_SUMMARY ]]; then
		rm -f "$GITHUB_STEP_SUMMARY"
		: >"$GITHUB_STEP_SUMMARY"
	fi
	;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
