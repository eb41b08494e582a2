#!/usr/bin/env bash
# Build a real kube-apiserver and etcd for the `real` test tier, from Debian
# bookworm's packages only (see tests/real_apiserver/README.md).
#
#   tests/real_apiserver/build.sh             build once, then reuse the cache
#   tests/real_apiserver/build.sh --rebuild   replace a cache made with other pins
#   tests/real_apiserver/build.sh --check     exit 0 if the cache is complete, else 1
#
# Prints the paths of the two binaries (kube-apiserver first, then etcd), one a
# line, on standard output; everything else goes to standard error.
#
# What it fetches, all through apt with a private state folder (the system's
# apt lists, caches and sources are left as they are; no root needed):
#   - the `kubernetes` source package (pinned; the full upstream tree with vendor/),
#   - golang-1.19-go and golang-1.19-src (Debian's Go 1.19, unpacked privately),
#   - etcd-server (its /usr/bin/etcd, unpacked; no service is installed or started),
#   - golang-github-modern-go-reflect2-dev 1.0.2 (replaces the vendored reflect2
#     1.0.1, which crashes on the first custom-resource decode under Go >= 1.18),
#   - rsync and libpopt0, only when the system has no rsync (the build needs it).
# The apt sources are the system's own Debian bookworm entries, with deb-src added.
# Set AICR_APT_SOURCES_LIST to a one-line-style sources.list to use other ones.
#
# Cache: ${XDG_CACHE_HOME:-~/.cache}/kubectl-aicr/real-apiserver/<KUBERNETES_DEB_VERSION>/
#        {kube-apiserver,etcd,manifest}; AICR_REAL_APISERVER_CACHE overrides the
#        folder above the version.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

mode=build
case "${1:-}" in
  "") ;;
  --rebuild) mode=rebuild ;;
  --check) mode=check ;;
  -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
  *) echo "build.sh: unknown argument: $1 (use --rebuild, --check)" >&2; exit 2 ;;
esac

log() { echo "real-apiserver: $*" >&2; }
die() { echo "real-apiserver: ERROR: $*" >&2; exit 1; }

cache_root="${AICR_REAL_APISERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-aicr/real-apiserver}"
out="$cache_root/$KUBERNETES_DEB_VERSION"

manifest() {
  cat <<EOF
kubernetes=$KUBERNETES_DEB_VERSION
kube-apiserver=$KUBE_APISERVER_VERSION
etcd-server=$ETCD_DEB_VERSION
golang-1.19-go=$GOLANG_DEB_VERSION
golang-github-modern-go-reflect2-dev=$REFLECT2_DEB_VERSION
build-recipe=$BUILD_RECIPE
EOF
}

print_paths() { echo "$out/kube-apiserver"; echo "$out/etcd"; }

cache_state() {  # prints: complete | absent | mismatch
  if [[ ! -e "$out/manifest" && ! -e "$out/kube-apiserver" && ! -e "$out/etcd" ]]; then
    echo absent
  elif [[ -x "$out/kube-apiserver" && -x "$out/etcd" && -f "$out/manifest" ]] \
      && [[ "$(cat "$out/manifest")" == "$(manifest)" ]]; then
    echo complete
  else
    echo mismatch
  fi
}

state="$(cache_state)"
case "$mode:$state" in
  *:complete)
    log "cached: $out (pins match tests/real_apiserver/versions.env)"
    print_paths; exit 0 ;;
  check:*)
    log "no complete cache at $out ($state)"; exit 1 ;;
  build:mismatch)
    die "the cache at $out does not match tests/real_apiserver/versions.env.
  cached manifest:
$(sed 's/^/    /' "$out/manifest" 2>/dev/null || echo '    (none: an interrupted build?)')
  pinned:
$(manifest | sed 's/^/    /')
  Run 'tests/real_apiserver/build.sh --rebuild' to replace it." ;;
esac

# --------------------------------------------------------------------------
t0=$SECONDS
work="$(mktemp -d "${TMPDIR:-/tmp}/aicr-real-apiserver.XXXXXX")"
cleanup() {
  if [[ -n "${AICR_KEEP_BUILD_DIR:-}" ]]; then log "kept the build folder $work"
  else chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; fi
}
trap cleanup EXIT
log "building in $work (set AICR_KEEP_BUILD_DIR=1 to keep it)"

# ---- private apt ------------------------------------------------------------
apt_dir="$work/apt"
mkdir -p "$apt_dir"/{lists/partial,archives/partial,etc/sources.list.d,etc/preferences.d}
if [[ -n "${AICR_APT_SOURCES_LIST:-}" ]]; then
  cp "$AICR_APT_SOURCES_LIST" "$apt_dir/etc/sources.list"
else
  python3 - "$apt_dir/etc/sources.list" <<'PY'
# Turn the system's Debian bookworm (main) entries into deb + deb-src lines.
import glob, os, re, sys
entries = []   # (uri, suite, signed_by)
def add(uri, suites, comps, signed_by):
    if "bookworm" in suites and "main" in comps:
        entries.append((uri.rstrip("/"), signed_by))
files = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list"))
for path in files:
    if not os.path.isfile(path):
        continue
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.split("#", 1)[0].strip()
        m = re.match(r"^deb(?:-src)?\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)$", line)
        if not m:
            continue
        opts = m.group(1) or ""
        sb = re.search(r"signed-by=(\S+?)(?:\s|\])", opts + " ")
        add(m.group(2), [m.group(3)], m.group(4).split(), sb.group(1) if sb else "")
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    text = open(path, encoding="utf-8", errors="replace").read()
    for stanza in re.split(r"\n\s*\n", text):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            k, v = line.split(":", 1)
            fields[k.strip().lower()] = v.strip()
        if fields.get("enabled", "yes").lower() == "no" or "deb" not in fields.get("types", "").split():
            continue
        for uri in fields.get("uris", "").split():
            add(uri, fields.get("suites", "").split(), fields.get("components", "").split(),
                fields.get("signed-by", ""))
seen, out = set(), []
for uri, sb in entries:
    if uri in seen:
        continue
    seen.add(uri)
    opt = "[signed-by=%s] " % sb if sb and not sb.startswith("-----") else ""
    out += ["deb %s%s bookworm main" % (opt, uri), "deb-src %s%s bookworm main" % (opt, uri)]
if not out:
    sys.exit("real-apiserver: ERROR: the system's apt sources have no Debian 'bookworm main' "
             "entry; set AICR_APT_SOURCES_LIST to a sources.list with deb and deb-src lines")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
fi
log "apt sources (private copy, with deb-src):"; sed 's/^/    /' "$apt_dir/etc/sources.list" >&2
apt_opts=(
  -o "Dir::State=$apt_dir" -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::State::status=/var/lib/dpkg/status"
  -o "Dir::Cache=$apt_dir" -o "Dir::Cache::archives=$apt_dir/archives"
  -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "Dir::Etc::sourcelist=$apt_dir/etc/sources.list"
  -o "Dir::Etc::sourceparts=$apt_dir/etc/sources.list.d"
  -o "Dir::Etc::preferences=$apt_dir/etc/preferences"
  -o "Dir::Etc::preferencesparts=$apt_dir/etc/preferences.d"
  -o "APT::Sandbox::User=$(id -un)"
  -q
)
log "apt-get update (private lists)"
apt-get "${apt_opts[@]}" update >"$work/apt-update.log" 2>&1 \
  || { tail -20 "$work/apt-update.log" >&2; die "apt-get update failed (log above)"; }

src_dir="$work/src"; debs="$work/debs"; root="$work/root"
mkdir -p "$src_dir" "$debs" "$root"
fetch_failed() {
  die "could not fetch $1 from Debian's archive (log above). The pins in
  tests/real_apiserver/versions.env are exact; if Debian replaced that version, update the pin
  (and KUBE_APISERVER_VERSION / ETCD_VERSION) deliberately: nothing else is used instead."
}
log "apt-get source kubernetes=$KUBERNETES_DEB_VERSION"
(cd "$src_dir" && apt-get "${apt_opts[@]}" source --download-only "kubernetes=$KUBERNETES_DEB_VERSION") \
  >"$work/apt-source.log" 2>&1 || { tail -20 "$work/apt-source.log" >&2; fetch_failed "kubernetes=$KUBERNETES_DEB_VERSION (source)"; }

pkgs=(
  "golang-1.19-go=$GOLANG_DEB_VERSION"
  "golang-1.19-src=$GOLANG_DEB_VERSION"
  "etcd-server=$ETCD_DEB_VERSION"
  "golang-github-modern-go-reflect2-dev=$REFLECT2_DEB_VERSION"
)
if ! command -v rsync >/dev/null 2>&1; then
  log "no rsync on this system: using a private copy from Debian's rsync package"
  pkgs+=(rsync libpopt0)   # tools only; they do not change the binaries, so not pinned
fi
log "apt-get download ${pkgs[*]}"
(cd "$debs" && apt-get "${apt_opts[@]}" download "${pkgs[@]}") >"$work/apt-download.log" 2>&1 \
  || { tail -20 "$work/apt-download.log" >&2; fetch_failed "${pkgs[*]}"; }
for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$root"; done

goroot="$root/usr/lib/go-1.19"
[[ -x "$goroot/bin/go" ]] || die "golang-1.19-go did not unpack to $goroot"
toolbin="$work/bin"; mkdir -p "$toolbin"
if [[ -x "$root/usr/bin/rsync" ]]; then
  cat >"$toolbin/rsync" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$root/usr/bin/rsync" "\$@"
EOF
  chmod +x "$toolbin/rsync"
  "$toolbin/rsync" --version >/dev/null || die "the private rsync does not run (missing libraries?); install rsync"
fi

# ---- the Kubernetes tree --------------------------------------------------------
log "unpacking the kubernetes source package"
dsc="$(ls "$src_dir"/kubernetes_*.dsc)"
tree="$src_dir/kubernetes"
if command -v dpkg-source >/dev/null 2>&1; then
  dpkg-source -x "$dsc" "$tree" >"$work/dpkg-source.log" 2>&1 \
    || { tail -20 "$work/dpkg-source.log" >&2; die "dpkg-source -x failed"; }
else   # no dpkg-dev: the orig tarball plus Debian's quilt series, by hand
  mkdir -p "$tree"
  tar -xzf "$src_dir"/kubernetes_*.orig.tar.gz -C "$tree" --strip-components=1
  tar -xJf "$src_dir"/kubernetes_*.debian.tar.xz -C "$tree"
  if [[ -f "$tree/debian/patches/series" ]]; then
    while read -r p _; do
      [[ -z "$p" || "$p" == \#* ]] && continue
      patch -d "$tree" -p1 -s <"$tree/debian/patches/$p"
    done <"$tree/debian/patches/series"
  fi
fi
[[ -d "$tree/vendor" && -d "$tree/cmd/kube-apiserver" ]] || die "the source tree has no vendor/ or cmd/kube-apiserver"

log "replacing vendor/github.com/modern-go/reflect2 (1.0.1) with Debian's $REFLECT2_DEB_VERSION"
r2src="$root/usr/share/gocode/src/github.com/modern-go/reflect2"
r2dst="$tree/vendor/github.com/modern-go/reflect2"
[[ -f "$r2src/reflect2.go" && -f "$r2src/go_above_118.go" ]] || die "reflect2 source not found in $r2src"
license="$(mktemp)"; cp "$r2dst/LICENSE" "$license"
rm -rf "$r2dst"; mkdir -p "$r2dst"
find "$r2src" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' \) ! -name '*_test.go' -exec cp {} "$r2dst/" \;
cp "$license" "$r2dst/LICENSE"; rm -f "$license"

# kube-openapi's and go-openapi's typeValidator take a value equal to its type's zero
# value for null: reflect.DeepEqual(reflect.Zero(T), reflect.ValueOf(data)). Built with
# Go >= 1.19 both Values point at the runtime's shared zero block for "", so every empty
# string in a custom resource fails validation with 'must be of type string: "null"'.
# Upstream kube-openapi now checks `data == nil` only; do the same. (reflect stays used.)
log "patching the openapi typeValidator's zero-value check (empty strings under Go >= 1.19)"
zero_check='if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {'
for f in vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go vendor/github.com/go-openapi/validate/type.go; do
  [[ "$(grep -cF "$zero_check" "$tree/$f")" == 1 ]] || die "$f: the zero-value check to patch was not found"
  sed -i 's/if data == nil || reflect\.DeepEqual(reflect\.Zero(reflect\.TypeOf(data)), reflect\.ValueOf(data)) {/if data == nil {/' "$tree/$f"
  [[ "$(grep -cF "$zero_check" "$tree/$f")" == 0 ]] || die "$f: the patch did not apply"
done

# ---- build ------------------------------------------------------------------
log "make WHAT=cmd/kube-apiserver with $("$goroot/bin/go" version) (a few minutes)"
build_start=$SECONDS
mkdir -p "$work/home"
(
  cd "$tree"
  export PATH="$goroot/bin:$toolbin:$PATH"
  export GOROOT="$goroot" HOME="$work/home" GOPROXY=off GOFLAGS="-mod=vendor -tags=providerless"
  export CGO_ENABLED=0 GOTOOLCHAIN=local
  unset GOPATH GOBIN GOCACHE
  make WHAT=cmd/kube-apiserver
) >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; die "make WHAT=cmd/kube-apiserver failed (last lines above)"; }
log "go build took $((SECONDS - build_start)) s"

apiserver="$tree/_output/bin/kube-apiserver"
etcd="$root/usr/bin/etcd"
[[ -x "$apiserver" ]] || die "the build made no $apiserver"
[[ -x "$etcd" ]] || die "etcd-server did not unpack to $etcd"
got="$("$apiserver" --version 2>&1 || true)"
[[ "$got" == "Kubernetes $KUBE_APISERVER_VERSION" ]] || die "kube-apiserver --version says '$got', expected 'Kubernetes $KUBE_APISERVER_VERSION'"
got="$("$etcd" --version 2>&1 | head -1 || true)"
[[ "$got" == "etcd Version: $ETCD_VERSION" ]] || die "etcd --version says '$got', expected 'etcd Version: $ETCD_VERSION'"

# ---- install into the cache (atomically: manifest last) -----------------------
mkdir -p "$cache_root"
stage="$(mktemp -d "$cache_root/.staging.XXXXXX")"
cp "$apiserver" "$stage/kube-apiserver"
cp "$etcd" "$stage/etcd"
chmod 0755 "$stage/kube-apiserver" "$stage/etcd"
manifest >"$stage/manifest"
rm -rf "$out"
mv "$stage" "$out"
chmod 0755 "$out"
log "built in $((SECONDS - t0)) s; cached in $out"
print_paths
