#!/usr/bin/env bash
# Build the real kube-apiserver and etcd of the `real` test tier from the Go module proxy
# (see tests/real_apiserver/README.md).
#
#   tests/real_apiserver/build.sh [VERSION...]            build what is not cached, then reuse it
#   tests/real_apiserver/build.sh --rebuild [VERSION...]  replace a cache made with other pins
#   tests/real_apiserver/build.sh --check [VERSION...]    exit 0 if every cache is complete, else 1
#   tests/real_apiserver/build.sh --pin                   (maintainers) rewrite modules/*/go.mod and go.sum
#                                                         from versions.env, through the proxy
#
# VERSION: a kube-apiserver version of versions.env (default: all of KUBERNETES_VERSIONS, or the
# space-separated AICR_REAL_APISERVER_VERSIONS). For each version it prints one line on standard
# output, "<version> <kube-apiserver path> <etcd path>"; everything else goes to standard error.
#
# What it builds, with the local Go (GOTOOLCHAIN=local, CGO_ENABLED=0, -trimpath):
#   - k8s.io/kubernetes/cmd/kube-apiserver from modules/kube-apiserver-<version>/, a go.mod of the tier's
#     own that requires k8s.io/kubernetes <version> and replaces each staging module (k8s.io/api,
#     apimachinery, apiserver, client-go, ...) by its published v0.<minor>.<patch>: inside the kubernetes
#     module they are `replace`d by ./staging/src paths, which a dependent module does not inherit.
#     Tags notest,grpcnotrace (as hack/lib/golang.sh builds release binaries); -ldflags -X sets
#     k8s.io/component-base/version and k8s.io/client-go/pkg/version as hack/lib/version.sh does, so
#     `--version` (and the server's /version and compatibility version) say <version>;
#   - go.etcd.io/etcd/server/v3 (its main package is the etcd binary) from modules/etcd-<etcd version>/.
# Downloads go to the Go module cache (`go env GOMODCACHE`), compiled packages to `go env GOCACHE`; the
# checksums in each go.sum are checked by the go command (and sum.golang.org for anything not in go.sum).
#
# Cache: ${XDG_CACHE_HOME:-~/.cache}/kubectl-aicr/real-apiserver/<version>/{kube-apiserver,etcd,manifest};
#        AICR_REAL_APISERVER_CACHE overrides the folder above the version. AICR_GO_JOBS (default 2) is
#        go build's -p.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { echo "real-apiserver: $*" >&2; }
die() { echo "real-apiserver: ERROR: $*" >&2; exit 1; }

# ---- pins (versions.env: KEY=VALUE lines, not shell) -------------------------------
declare -A pin=()
while IFS= read -r line || [[ -n "$line" ]]; do
  [[ -z "${line// }" || "$line" == \#* ]] && continue
  [[ "$line" == *=* ]] || die "versions.env: not KEY=VALUE: $line"
  pin["${line%%=*}"]="${line#*=}"
done <"$here/versions.env"
read -r -a all_versions <<<"${pin[KUBERNETES_VERSIONS]:?versions.env has no KUBERNETES_VERSIONS}"
recipe="${pin[BUILD_RECIPE]:?versions.env has no BUILD_RECIPE}"

mode=build
args=()
for a in "$@"; do
  case "$a" in
    --rebuild) mode=rebuild ;;
    --check) mode=check ;;
    --pin) mode=pin ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    -*) die "unknown argument: $a (use --rebuild, --check, --pin)" ;;
    *) args+=("$a") ;;
  esac
done
if ((${#args[@]} == 0)); then
  if [[ -n "${AICR_REAL_APISERVER_VERSIONS:-}" ]]; then read -r -a args <<<"$AICR_REAL_APISERVER_VERSIONS"
  else args=("${all_versions[@]}"); fi
fi
for v in "${args[@]}"; do
  [[ " ${all_versions[*]} " == *" $v "* ]] || die "$v is not one of KUBERNETES_VERSIONS in versions.env (${all_versions[*]})"
  [[ -n "${pin[ETCD_FOR_$v]:-}" ]] || die "versions.env has no ETCD_FOR_$v"
done

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath -buildvcs=false -p=${AICR_GO_JOBS:-2}"
command -v go >/dev/null 2>&1 || die "no go command on PATH (Go 1.26 or newer is needed)"

apiserver_module() { echo "$here/modules/kube-apiserver-$1"; }
etcd_module() { echo "$here/modules/etcd-$1"; }

# ---- --pin: write the modules (maintainers, when versions.env changes) ----------------
pin_modules() {
  local v staging mod etcd
  for v in "${all_versions[@]}"; do
    staging="v0.${v#v1.}"
    mod="$(apiserver_module "$v")"; mkdir -p "$mod"
    log "pinning $mod"
    local gomod; gomod="$(go mod download -json "k8s.io/kubernetes@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
    {
      echo "// The real-server tier's own module: builds k8s.io/kubernetes/cmd/kube-apiserver $v."
      echo "// Written by tests/real_apiserver/build.sh --pin from versions.env; do not edit by hand."
      echo "module aicr.test/real-apiserver"
      echo
      echo "go $(sed -n 's/^go //p' "$gomod")"
      echo
      echo "require k8s.io/kubernetes $v"
      echo
      echo "// k8s.io/kubernetes replaces these by ./staging/src/...; a dependent module takes the published ones."
      echo "replace ("
      sed -n 's|^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*$|\1|p' "$gomod" | while read -r m; do
        printf '\t%s => %s %s\n' "$m" "$m" "$staging"
      done
      echo ")"
      echo
      echo "tool k8s.io/kubernetes/cmd/kube-apiserver"
    } >"$mod/go.mod"
    (cd "$mod" && rm -f go.sum && GOFLAGS=-mod=mod go mod tidy)
  done
  for etcd in $(for v in "${all_versions[@]}"; do echo "${pin[ETCD_FOR_$v]}"; done | sort -u); do
    mod="$(etcd_module "$etcd")"; mkdir -p "$mod"
    log "pinning $mod"
    local gov; gov="$(go mod download -json "go.etcd.io/etcd/server/v3@$etcd" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
    {
      echo "// The real-server tier's own module: builds etcd $etcd (go.etcd.io/etcd/server/v3's main package)."
      echo "// Written by tests/real_apiserver/build.sh --pin from versions.env; do not edit by hand."
      echo "module aicr.test/real-etcd"
      echo
      echo "go $(sed -n 's/^go //p' "$gov")"
      echo
      echo "require go.etcd.io/etcd/server/v3 $etcd"
      echo
      echo "tool go.etcd.io/etcd/server/v3"
    } >"$mod/go.mod"
    (cd "$mod" && rm -f go.sum && GOFLAGS=-mod=mod go mod tidy)
  done
}
if [[ "$mode" == pin ]]; then pin_modules; exit 0; fi

cache_root="${AICR_REAL_APISERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-aicr/real-apiserver}"

sum_of() { cat "$1/go.mod" "$1/go.sum" | sha256sum | cut -c1-16; }  # as real_apiserver.py _module_sum
manifest() {  # the pins a cache was built with; tests/support/real_apiserver.py checks the same lines
  local v="$1" etcd="${pin[ETCD_FOR_$1]}"
  cat <<MANIFEST
kube-apiserver=$v
etcd=$etcd
build-recipe=$recipe
kube-apiserver-module=$(sum_of "$(apiserver_module "$v")")
etcd-module=$(sum_of "$(etcd_module "$etcd")")
MANIFEST
}
cache_state() {  # complete | absent | mismatch
  local out="$cache_root/$1"
  if [[ ! -e "$out" ]]; then echo absent
  elif [[ -x "$out/kube-apiserver" && -x "$out/etcd" && -f "$out/manifest" ]] \
      && [[ "$(cat "$out/manifest")" == "$(manifest "$1")" ]]; then echo complete
  else echo mismatch; fi
}

build_one() {
  local v="$1" etcd="${pin[ETCD_FOR_$1]}" t0=$SECONDS out="$cache_root/$1"
  local amod emod; amod="$(apiserver_module "$v")"; emod="$(etcd_module "$etcd")"
  [[ -f "$amod/go.sum" && -f "$emod/go.sum" ]] || die "no $amod/go.sum or $emod/go.sum: run build.sh --pin"
  local major_minor="${v#v}"; major_minor="${major_minor%.*}"
  local ld="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$v -X $p.gitMajor=${major_minor%%.*} -X $p.gitMinor=${major_minor#*.}"
    ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  mkdir -p "$cache_root"
  local stage; stage="$(mktemp -d "$cache_root/.staging.XXXXXX")"
  trap 'rm -rf "$stage"' RETURN
  log "$v: go build k8s.io/kubernetes/cmd/kube-apiserver with $(go env GOVERSION) (downloads into $(go env GOMODCACHE))"
  (cd "$amod" && go build -tags notest,grpcnotrace -ldflags "$ld" -o "$stage/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver) \
    || die "go build of kube-apiserver $v failed (above)"
  log "$v: kube-apiserver built in $((SECONDS - t0)) s; go build go.etcd.io/etcd/server/v3 $etcd"
  local t1=$SECONDS
  (cd "$emod" && go build -ldflags "-s -w" -o "$stage/etcd" go.etcd.io/etcd/server/v3) \
    || die "go build of etcd $etcd failed (above)"
  log "$v: etcd built in $((SECONDS - t1)) s"
  local got
  got="$("$stage/kube-apiserver" --version 2>&1 || true)"
  [[ "$got" == "Kubernetes $v" ]] || die "kube-apiserver --version says '$got', expected 'Kubernetes $v'"
  got="$("$stage/etcd" --version 2>&1 | head -1 || true)"
  [[ "$got" == "etcd Version: ${etcd#v}" ]] || die "etcd --version says '$got', expected 'etcd Version: ${etcd#v}'"
  manifest "$v" >"$stage/manifest"
  chmod 0755 "$stage" "$stage/kube-apiserver" "$stage/etcd"
  rm -rf "$out"
  mv "$stage" "$out"   # atomically: a cache folder is complete or absent
  log "$v: built in $((SECONDS - t0)) s; cached in $out"
}

status=0
for v in "${args[@]}"; do
  state="$(cache_state "$v")"
  case "$mode:$state" in
    *:complete) log "$v: cached in $cache_root/$v (pins match versions.env)" ;;
    check:*) log "$v: no complete cache in $cache_root/$v ($state)"; status=1; continue ;;
    build:mismatch)
      die "the cache in $cache_root/$v does not match versions.env and modules/.
  cached manifest:
$(sed 's/^/    /' "$cache_root/$v/manifest" 2>/dev/null || echo '    (none)')
  pinned:
$(manifest "$v" | sed 's/^/    /')
  Run 'tests/real_apiserver/build.sh --rebuild $v' to replace it." ;;
    *) build_one "$v" ;;
  esac
  echo "$v $cache_root/$v/kube-apiserver $cache_root/$v/etcd"
done
exit "$status"
