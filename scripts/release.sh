#!/usr/bin/env bash
# Builds the release archives locally, as the release workflow publishes them:
#
#   scripts/release.sh [-v VERSION] [-o DIR] [-p "linux/amd64 linux/arm64 darwin/arm64"]
#
# For each platform a static binary (CGO_ENABLED=0, -trimpath, symbols stripped) stamped
# with the version, the commit and the commit date (`slogate version` prints them), packed
# as DIR/slogate_<version>_<os>_<arch>.tar.gz (the version without its leading v, as
# GoReleaser names archives; the binary and README.md at the top level), and
# DIR/SHA256SUMS over the archives in `sha256sum` format. .goreleaser.yaml produces the
# same names and stamps; this script needs nothing but Go, tar, gzip and sha256sum (or
# shasum), so that the Action's test and a mirror can build them offline.
#
# VERSION defaults to the tag at HEAD (git describe --tags --exact-match), else
# v0.0.0-dev+<short commit>. The output is reproducible: the commit date stamps the binary
# and dates every file in the archives (SOURCE_DATE_EPOCH overrides it).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"

version=""
out=dist
platforms="linux/amd64 linux/arm64 darwin/arm64"
while getopts "v:o:p:h" opt; do
	case $opt in
	v) version=$OPTARG ;;
	o) out=$OPTARG ;;
	p) platforms=$OPTARG ;;
	h)
		sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) exit 2 ;;
	esac
done

die() {
	printf 'release: %s\n' "$*" >&2
	exit 1
}

commit=$(git rev-parse HEAD 2>/dev/null || true)
if [[ -z $version ]]; then
	version=$(git describe --tags --exact-match HEAD 2>/dev/null || true)
	[[ -n $version ]] || version="v0.0.0-dev+$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
fi
# A version is a tag: v, then SemVer (the Go module's rule, so that go install @version
# names the same thing).
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]] ||
	die "version \"$version\" is not a release tag: want vMAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], e.g. v1.2.3"
bare=${version#v}

if [[ -n ${SOURCE_DATE_EPOCH:-} ]]; then
	epoch=$SOURCE_DATE_EPOCH
else
	epoch=$(git log -1 --format=%ct HEAD 2>/dev/null || date +%s)
fi
date=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$epoch" +%Y-%m-%dT%H:%M:%SZ)

if command -v sha256sum >/dev/null; then
	sha256() { sha256sum "$@"; }
else
	sha256() { shasum -a 256 "$@"; }
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d "${TMPDIR:-/tmp}/slogate-release.XXXXXX")
trap 'rm -rf "$stage"' EXIT

pkg=github.com/slogate/slogate/cli
ldflags="-s -w -buildid= -X $pkg.Version=$version -X $pkg.Commit=$commit -X $pkg.Date=$date"
archives=()
for p in $platforms; do
	goos=${p%/*}
	goarch=${p#*/}
	name=slogate_${bare}_${goos}_${goarch}
	dir=$stage/$name
	mkdir -p "$dir"
	t=$SECONDS
	# The caller's GOFLAGS and go.work stay out: a -mod=vendor or -race from the
	# environment would change what is released.
	env GOOS="$goos" GOARCH="$goarch" CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off \
		go build -trimpath -ldflags "$ldflags" -o "$dir/slogate" ./cmd/slogate ||
		die "building $goos/$goarch failed"
	cp README.md "$dir/"
	touch -d "@$epoch" "$dir/slogate" "$dir/README.md" 2>/dev/null || true
	# Sorted names, fixed owner and dates, gzip without a name or time: the same commit
	# gives the same bytes.
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
		-C "$dir" -cf - slogate README.md | gzip -n -9 >"$out/$name.tar.gz"
	archives+=("$name.tar.gz")
	printf 'release: %s/%s -> %s (%d s)\n' "$goos" "$goarch" "$out/$name.tar.gz" "$((SECONDS - t))" >&2
done

(cd "$out" && sha256 "${archives[@]}") >"$out/SHA256SUMS"
printf 'release: %s (commit %s, %s): %s\n' "$version" "${commit:-unknown}" "$date" "$out/SHA256SUMS" >&2
