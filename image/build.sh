#!/usr/bin/env bash
# Builds bcb's container image from image/Containerfile and tags it with image/TAG.
#
#   image/build.sh [--base auto|python|mmdebstrap|IMAGE] [--profile dist|release|dev]
#                  [--bin DIR] [--gt "full hard"|hard|none] [--tag TAG] [--no-uv-cache] [--no-cache]
#                  [--space]
#
# --base     python: the published python:3.11-slim-bookworm (Docker Hub); mmdebstrap: a
#            Debian 12 root file system built here with mmdebstrap and `podman import`ed as
#            localhost/bcb-base:bookworm-HASH (kept: later builds reuse it); IMAGE: any Debian 12
#            image; auto (default): python where Docker Hub answers, else mmdebstrap.
# --profile  cargo profile bcb and bcb-pyenv are built with (default dist); --bin DIR takes
#            both from DIR instead (no build). Built on this host: its glibc must be at most
#            Debian 12's (2.36), which the build's `bcb --version` step checks.
# --gt       subsets whose ground truth is checked at build time (default "full hard").
# --no-cache rebuilds every layer, and the mmdebstrap base (a cold build).
# --space    then builds the Space's image on it (space/Dockerfile) as TAG-space.
# The host's uv cache (~/.cache/uv) and CA bundle ($SSL_CERT_FILE: a proxy's root, say) are
# mounted into the env's install when they exist (podman); the image keeps neither.
# Podman runs with image/containers.conf unless CONTAINERS_CONF is set, and its build steps with
# the seccomp profile the Kubernetes manifests ask for (examples/k8s/seccomp/bcb-sandbox.json:
# bcb's namespaces for the ground truth's check). Prints the tag last.
set -euo pipefail
cd "$(dirname "$0")/.."

base=auto profile=dist bin_dir="" gt="full hard" tag="" uv_cache="$HOME/.cache/uv" no_cache=() space=""
while (($#)); do
  case "$1" in
    --base) base="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --bin) bin_dir="$2"; shift 2 ;;
    --gt) gt="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --no-uv-cache) uv_cache=""; shift ;;
    --no-cache) no_cache=(--no-cache); shift ;;
    --space) space=1; shift ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$gt" == none ]] && gt=""
tag="${tag:-$(tr -d '[:space:]' <image/TAG)}"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/image/containers.conf}"
step() { echo "== $(date +%T) $*" >&2; }

if [[ -z "$bin_dir" ]]; then
  step "cargo build --profile $profile (bcb, bcb-pyenv)"
  cargo build --profile "$profile" --locked -p bcb-cli -p bcb-pyenv --bin bcb --bin bcb-pyenv
  bin_dir="target/$([[ "$profile" == dev ]] && echo debug || echo "$profile")"
fi

if [[ "$base" == auto ]]; then
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 https://registry-1.docker.io/v2/ || true)"
  if [[ "$code" == 200 || "$code" == 401 ]]; then base=python; else base=mmdebstrap; fi
  step "base: $base (Docker Hub answered ${code:-nothing})"
fi
case "$base" in
  python) base=docker.io/library/python:3.11-slim-bookworm ;;
  mmdebstrap)
    # Python 3.11 and image/packages.txt from Debian 12 and its security updates; the name
    # holds a digest of what went in, so a changed list builds a new base.
    include="python3.11,python3.11-venv,python3.11-dev,$(sed -e 's/#.*//' image/packages.txt | xargs | tr ' ' ,)"
    mirrors=("deb http://deb.debian.org/debian bookworm main" "deb http://deb.debian.org/debian-security bookworm-security main")
    digest="$(printf '%s\n' "$include" "${mirrors[@]}" | sha256sum | cut -c1-12)"
    base="localhost/bcb-base:bookworm-$digest"
    if ((${#no_cache[@]} == 0)) && podman image exists "$base"; then
      step "base: $base (built before)"
    else
      command -v mmdebstrap >/dev/null || { printf "error: mmdebstrap not found\nhint: apt-get install mmdebstrap, or --base python where Docker Hub is reachable\n" >&2; exit 1; }
      tar="$(mktemp -d)/base.tar"
      step "mmdebstrap bookworm ($include)"
      mmdebstrap --quiet --variant=minbase --include="$include" bookworm "$tar" "${mirrors[@]}"
      podman import --quiet --change 'CMD ["/bin/bash"]' "$tar" "$base" >/dev/null
      rm -rf "$(dirname "$tar")"
    fi
    ;;
esac

# The build context: the two binaries and the package list, nothing else.
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
cp "$bin_dir/bcb" "$bin_dir/bcb-pyenv" image/packages.txt "$ctx/"
args=(--security-opt "seccomp=$PWD/examples/k8s/seccomp/bcb-sandbox.json" --file image/Containerfile --tag "$tag" --build-arg "BASE=$base" --build-arg "GT_SUBSETS=$gt")
if [[ -n "$uv_cache" && -d "$uv_cache" ]]; then
  # An overlay: the build reads the host's cache, its writes are dropped.
  args+=(--volume "$uv_cache:/var/cache/uv:O" --build-arg UV_CACHE_DIR=/var/cache/uv)
fi
ca=()
if [[ -n "${SSL_CERT_FILE:-}" && -f "$SSL_CERT_FILE" ]]; then
  ca=(--volume "$SSL_CERT_FILE:/tmp/bcb-ca-bundle.crt:ro" --build-arg CA_BUNDLE=/tmp/bcb-ca-bundle.crt)
fi
step "podman build ($tag from $base, ground truth: ${gt:-none})"
podman build "${no_cache[@]}" "${args[@]}" "${ca[@]}" "$ctx" >&2
step "built $tag: $(podman image inspect --format '{{.Size}}' "$tag") bytes"
if [[ -n "$space" ]]; then
  # The Space's Dockerfile expects the repository's root as its context; only its files.
  rm -rf "${ctx:?}"/* && mkdir "$ctx/space" && cp space/app.py space/requirements.txt "$ctx/space/"
  step "podman build ($tag-space: space/Dockerfile)"
  podman build "${no_cache[@]}" --security-opt "seccomp=$PWD/examples/k8s/seccomp/bcb-sandbox.json" --file space/Dockerfile --tag "$tag-space" \
    --build-arg "BCB_IMAGE=$tag" "${ca[@]}" "$ctx" >&2
  step "built $tag-space"
fi
echo "$tag"
