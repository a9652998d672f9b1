#!/usr/bin/env bash
# The HTML report as a browser shows it: runs `slogate demo --regress` (the simulated
# engine, no GPU), re-renders its files with `slogate report` (which must give the same
# bytes), opens report.html in headless Chromium (Debian's package, installed if absent)
# for a DOM dump and a screenshot, and fails when the verdict table is missing or any
# chart is empty (scripts/reportcheck).
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
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$out/report.html" >"$work/dom.html" 2>"$work/chromium.log" ||
	{ cat "$work/chromium.log" >&2; log "FAIL: chromium --dump-dom"; exit 1; }
rm -rf "$work/profile"
timeout 120 "$chromium" "${flags[@]}" --window-size=1280,2400 --screenshot="$work/report.png" "file://$out/report.html" 2>>"$work/chromium.log" >/dev/null ||
	{ cat "$work/chromium.log" >&2; log "FAIL: chromium --screenshot"; exit 1; }
[[ -n ${REPORT_CHECK_KEEP:-} ]] && cp "$work/report.png" "$work/dom.html" "$out/report.html" "$out/comment.md" "$REPORT_CHECK_KEEP/"
go run ./scripts/reportcheck "$work/dom.html" "$work/report.png"
log "ok"
