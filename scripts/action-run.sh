#!/usr/bin/env bash
# The run step of action.yml: install pp-attr-lint and check the inputs' paths with GitHub
# annotations.  It reads the action's inputs from the environment, as action.yml passes them:
#
#   INPUT_PATHS       files or folders, separated by whitespace (default ".")
#   INPUT_ARGS        extra arguments for `pp-attr-lint check`, separated by whitespace
#   INPUT_VERSION     "" = install the action's own checkout ($GITHUB_ACTION_PATH), "latest",
#                     a version ("0.1.0"), or "installed" = use the pp-attr-lint on PATH
#   INPUT_SARIF_FILE  also write a SARIF report there ("" = no SARIF)
#   INPUT_PYTHON      interpreter to create the tool's virtual environment with (default python3)
#
# Exit code: pp-attr-lint's (0 clean, 1 findings, 2 error).  Writes `exit-code` and `sarif-file`
# to $GITHUB_OUTPUT when it is set.  Runs locally too (tests do), e.g.
#   INPUT_PATHS=fixtures/seed INPUT_VERSION=installed scripts/action-run.sh
set -euo pipefail
set -f  # the inputs are split on whitespace, never glob-expanded

action_path="${GITHUB_ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
version="${INPUT_VERSION:-}"
version="${version#v}"

read -r -d '' -a paths <<<"${INPUT_PATHS:-.}" || true
read -r -d '' -a extra <<<"${INPUT_ARGS:-}" || true
[ "${#paths[@]}" -eq 0 ] && paths=(.)

if [ "$version" = "installed" ]; then
  tool=(pp-attr-lint)
  if ! command -v pp-attr-lint >/dev/null 2>&1; then
    echo "::error title=pp-attr-lint::version: installed, but pp-attr-lint is not on PATH"
    exit 2
  fi
else
  venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/pp-attr-lint-venv"
  case "$version" in
    "") spec="$action_path" ;;
    latest) spec="pp-attr-lint" ;;
    *) spec="pp-attr-lint==$version" ;;
  esac
  echo "::group::Install pp-attr-lint ($spec)"
  "${INPUT_PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --disable-pip-version-check --quiet "$spec"
  echo "::endgroup::"
  tool=("$venv/bin/pp-attr-lint")
fi
"${tool[@]}" --version

sarif="${INPUT_SARIF_FILE:-}"
if [ -n "$sarif" ]; then
  # the SARIF report never decides the exit code; the annotated run below does
  set +e
  "${tool[@]}" check --output-format sarif --output-file "$sarif" --exit-zero "${extra[@]}" -- "${paths[@]}"
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    echo "::warning title=pp-attr-lint::writing the SARIF report failed (exit $rc)"
  fi
fi

set +e
"${tool[@]}" check --output-format github "${extra[@]}" -- "${paths[@]}"
rc=$?
set -e
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "exit-code=$rc"
    echo "sarif-file=$sarif"
  } >>"$GITHUB_OUTPUT"
fi
exit "$rc"
