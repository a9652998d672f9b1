#!/usr/bin/env bash
# The Action's install step (action.yml runs it): puts the slogate binary for this runner
# in place and writes its path to $GITHUB_OUTPUT as `path`, with `source` (cache,
# download or build) and `version`.
#
# 1. The version: the input `version` (INPUT_VERSION), else the action's own ref
#    (SLOGATE_ACTION_REF) when it is a release tag (v1.2.3), else the version in
#    .slogate-version at the action's root (written by the release workflow on the commit
#    a major tag such as v1 points to).
# 2. With a version: the tool cache ($RUNNER_TOOL_CACHE/slogate/<version>/<arch>, with
#    <arch>.complete beside it, the layout of the Actions toolkit), else a download of
#    <release-url>/<tag>/slogate_<version>_<os>_<arch>.tar.gz and <release-url>/<tag>/SHA256SUMS,
#    verified, unpacked and cached. A missing asset or a checksum mismatch stops here,
#    naming the file, the expected and the actual SHA-256; nothing is built instead.
# 3. Without one (a branch, a commit, uses: ./): a build from the action's source with the
#    go on PATH; no Go is installed from the network.
#
# Environment: INPUT_VERSION, INPUT_RELEASE-URL (read with printenv: the name has a hyphen),
# SLOGATE_ACTION_REF, SLOGATE_ACTION_PATH, and the runner's RUNNER_OS, RUNNER_ARCH,
# RUNNER_TOOL_CACHE, RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_SHA.
# Exit status: 0 installed; 1 download, verification or build failed; 2 bad input.
set -euo pipefail

DEFAULT_RELEASE_URL=https://github.com/slogate/slogate/releases/download
TAG_RE='^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'

err() {
	# An annotation on the run's page, and the same words in the log.
	printf '::error title=slogate install::%s\n' "$*"
}
die() {
	err "$1"
	exit "${2:-1}"
}
out() { printf '%s=%s\n' "$1" "$2" >>"${GITHUB_OUTPUT:-/dev/null}"; }

action_path=${SLOGATE_ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
ref=${SLOGATE_ACTION_REF:-}
want=${INPUT_VERSION:-}
release_url=$(printenv 'INPUT_RELEASE-URL' || true)
release_url=${release_url:-$DEFAULT_RELEASE_URL}
release_url=${release_url%/}
temp=${RUNNER_TEMP:-${TMPDIR:-/tmp}}

# ---- which version ----------------------------------------------------------------------

version="" from=""
if [[ -n $want ]]; then
	[[ $want == v* ]] || want=v$want
	[[ $want =~ $TAG_RE ]] ||
		die "input version \"${INPUT_VERSION}\" is not a release version: want vMAJOR.MINOR.PATCH (e.g. v1.2.3), or empty for the action's own ref" 2
	version=$want from="input version"
elif [[ $ref =~ $TAG_RE ]]; then
	version=$ref from="the action's ref"
elif [[ -f $action_path/.slogate-version ]]; then
	v=$(tr -d ' \t\r\n' <"$action_path/.slogate-version")
	[[ $v =~ $TAG_RE ]] || die "$action_path/.slogate-version: \"$v\" is not a release version (want vMAJOR.MINOR.PATCH)" 2
	version=$v from=".slogate-version of ref ${ref:-(none)}"
fi

# ---- no release: build from the action's source -----------------------------------------

if [[ -z $version ]]; then
	if ! command -v go >/dev/null 2>&1; then
		die "the action's ref \"${ref:-(local: uses: ./)}\" is not a release and no go is on PATH, so there is nothing to download and nothing to build with: set the input version (version: v1.2.3), use a release tag (uses: slogate/slogate@v1.2.3), or put Go $(sed -n 's/^go //p' "$action_path/go.mod") or newer on PATH" 2
	fi
	echo "slogate: the action's ref \"${ref:-(local)}\" is not a release: building from source with $(go version) from $(command -v go)"
	commit=""
	[[ -n $ref ]] || commit=${GITHUB_SHA:-} # uses: ./ builds the workflow's own checkout
	bin=$temp/slogate-source/slogate
	# GOFLAGS and GOWORK are the action's, not the caller's: a caller's -mod=vendor or
	# go.work must not leak into this build, and VCS stamping fails on runners where git
	# finds the checkout's owner dubious; the version comes from the action's ref instead.
	(cd "$action_path" && env GOFLAGS=-buildvcs=false GOWORK=off CGO_ENABLED=0 go build -trimpath \
		-ldflags "-X github.com/slogate/slogate/cli.Version=${ref:-local} -X github.com/slogate/slogate/cli.Commit=$commit" \
		-o "$bin" ./cmd/slogate) || die "building slogate from $action_path failed"
	"$bin" version
	out path "$bin"
	out source build
	out version "${ref:-local}"
	exit 0
fi

# ---- a release: the tool cache, else download and verify ----------------------------------

case ${RUNNER_OS:-$(uname -s)} in
Linux) goos=linux ;;
macOS | Darwin) goos=darwin ;;
*) goos="" ;;
esac
case ${RUNNER_ARCH:-$(uname -m)} in
X64 | x86_64 | amd64) goarch=amd64 arch=x64 ;;
ARM64 | aarch64 | arm64) goarch=arm64 arch=arm64 ;;
*) goarch="" arch="" ;;
esac
case $goos/$goarch in
linux/amd64 | linux/arm64 | darwin/arm64) ;;
*) die "no slogate release binary for ${RUNNER_OS:-$(uname -s)}/${RUNNER_ARCH:-$(uname -m)}: releases have linux/amd64, linux/arm64 and darwin/arm64" ;;
esac

bare=${version#v}
asset=slogate_${bare}_${goos}_${goarch}.tar.gz
if [[ -n ${RUNNER_TOOL_CACHE:-} ]]; then
	cache_root=$RUNNER_TOOL_CACHE
else
	cache_root=$temp/slogate-tool-cache
	echo "slogate: RUNNER_TOOL_CACHE is not set: caching in $cache_root for this job only"
fi
cache=$cache_root/slogate/$bare/$arch
bin=$cache/slogate

if [[ -f $cache.complete && -x $bin ]] && "$bin" version >/dev/null 2>&1; then
	echo "slogate: $version ($from) from the tool cache $cache"
	"$bin" version
	out path "$bin"
	out source cache
	out version "$version"
	exit 0
fi

if command -v sha256sum >/dev/null 2>&1; then
	sha256() { sha256sum "$1" | cut -d' ' -f1; }
else
	sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
fi

# fetch URL FILE: 0 when the server answered 200 with the body written to FILE; else the
# reason is in $fetch_err.
fetch_err=""
fetch() {
	local code rc=0
	if command -v curl >/dev/null 2>&1; then
		code=$(curl -sS -L --retry 3 --connect-timeout 20 --max-time 300 -o "$2" -w '%{http_code}' "$1" 2>"$2.err") || rc=$?
		if [[ $rc -ne 0 ]]; then
			fetch_err="curl failed (exit $rc): $(tr '\n' ' ' <"$2.err")"
			return 1
		elif [[ $code != 200 ]]; then
			fetch_err="HTTP $code"
			return 1
		fi
	elif command -v wget >/dev/null 2>&1; then
		wget -q --tries=3 --timeout=60 -O "$2" "$1" 2>"$2.err" || {
			fetch_err="wget failed: $(tr '\n' ' ' <"$2.err")"
			return 1
		}
	else
		fetch_err="neither curl nor wget is on PATH"
		return 1
	fi
}

dl=$(mktemp -d "$temp/slogate-download.XXXXXX")
trap 'rm -rf "$dl"' EXIT
base=$release_url/$version
echo "slogate: downloading $version ($from) for $goos/$goarch from $base"
t0=$(date +%s)

fetch "$base/SHA256SUMS" "$dl/SHA256SUMS" ||
	die "SHA256SUMS of $version: $base/SHA256SUMS: $fetch_err; without it $asset cannot be verified (expected sha256: unknown, actual: not downloaded), so nothing runs"
expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1; exit }' "$dl/SHA256SUMS")

if ! fetch "$base/$asset" "$dl/$asset"; then
	die "$asset: missing from the $version release: $base/$asset: $fetch_err (expected sha256: ${expected:-none, SHA256SUMS does not list it}; actual: nothing downloaded), so nothing runs"
fi
actual=$(sha256 "$dl/$asset")
[[ -n $expected ]] ||
	die "$asset: SHA256SUMS of $version ($base/SHA256SUMS) does not list it (expected sha256: none; actual: $actual), so nothing runs"
[[ $actual == "$expected" ]] ||
	die "$asset: checksum mismatch: expected sha256 $expected (SHA256SUMS of $version, $base/SHA256SUMS), actual $actual; the archive is refused and nothing runs"
echo "slogate: $asset: sha256 $actual matches SHA256SUMS"

mkdir -p "$dl/unpacked"
tar -xzf "$dl/$asset" -C "$dl/unpacked" || die "$asset: unpacking failed"
[[ -f $dl/unpacked/slogate ]] || die "$asset: holds no slogate binary at its top level"
chmod +x "$dl/unpacked/slogate"

# Into the cache: moved in whole, then marked complete, so that a job that finds the
# marker finds the whole binary; a concurrent job that got there first wins.
mkdir -p "$(dirname "$cache")"
rm -f "$cache.complete"
rm -rf "$cache"
mv "$dl/unpacked" "$cache" 2>/dev/null || [[ -x $bin ]] || die "cannot move the binary into $cache"
touch "$cache.complete"
echo "slogate: $version cached in $cache ($(($(date +%s) - t0)) s)"
"$bin" version
out path "$bin"
out source download
out version "$version"
