#!/usr/bin/env bash
# The run step of action.yml: install pp-attr-lint and check the inputs' paths with GitHub
# annotations.  It reads the action's inputs from the environment, as action.yml passes them:
#
#   INPUT_PATHS       files or folders, separated by whitespace (default ".")
#   INPUT_ARGS        extra arguments for `pp-attr-lint check`, separated by whitespace
#   INPUT_VERSION     "" = install the action's own checkout ($GITHUB_ACTION_PATH), "latest",
#                     a version ("0.1.0") from the package index (PyPI; no release of
#                     pp-attr-lint is published there yet, so these fail until one is), or
#                     "installed" = use the pp-attr-lint on PATH
#   INPUT_SARIF_FILE  also write a SARIF report there ("" = no SARIF)
#   INPUT_PYTHON      interpreter to create the tool's virtual environment with (default python3)
#   INPUT_BASELINE_COMMIT
#                     "auto" (default) = on pull_request(_target) events PP_ATTR_LINT_PR_BASE (the
#                     pull request's base commit), else none; "none" = every finding; else a commit
#   PP_ATTR_LINT_PR_BASE  the pull request's base commit (action.yml passes
#                     github.event.pull_request.base.sha); GITHUB_EVENT_NAME says the event
#
# Exit code: pp-attr-lint's (0 clean, 1 findings, 2 error, 3 the engine the checked code imports
# cannot be found: docs/plugins.md), or 2 with an `::error` line when
# pp-attr-lint cannot be installed or started (the install's log group is closed first).
# Writes `exit-code` and `sarif-file` to $GITHUB_OUTPUT when it is set.  Runs locally too (tests
# do), e.g.
#   INPUT_PATHS=fixtures/seed INPUT_VERSION=installed scripts/action-run.sh
set -euo pipefail
set -f  # the inputs are split on whitespace, never glob-expanded

action_path="${GITHUB_ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
version="${INPUT_VERSION:-}"
version="${version#v}"

read -r -d '' -a paths <<<"${INPUT_PATHS:-.}" || true
read -r -d '' -a extra <<<"${INPUT_ARGS:-}" || true
[ "${#paths[@]}" -eq 0 ] && paths=(.)

sarif="${INPUT_SARIF_FILE:-}"
group_open=""

write_outputs() {  # EXIT-CODE SARIF-FILE
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf '%s\n' "exit-code=$1" "sarif-file=$2" >>"$GITHUB_OUTPUT"
  fi
}

fail() {  # MESSAGE: pp-attr-lint could not be installed or started; exit 2 (1 means findings)
  local msg="$1"
  if [ -n "$group_open" ]; then
    echo "::endgroup::"
    group_open=""
  fi
  msg="${msg//'%'/%25}"  # a workflow command's message escapes %, CR and LF
  msg="${msg//$'\r'/%0D}"
  msg="${msg//$'\n'/%0A}"
  echo "::error title=pp-attr-lint::$msg"
  write_outputs 2 ""
  exit 2
}

if [ "$version" = "installed" ]; then
  tool=(pp-attr-lint)
  if ! command -v pp-attr-lint >/dev/null 2>&1; then
    fail "version: installed, but pp-attr-lint is not on PATH"
  fi
else
  venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/pp-attr-lint-venv"
  python="${INPUT_PYTHON:-python3}"
  case "$version" in
    "") spec="$action_path"; what="the action's own checkout ($action_path)" ;;
    latest) spec="pp-attr-lint"; what="the latest release of pp-attr-lint from the package index" ;;
    *) spec="pp-attr-lint==$version"; what="pp-attr-lint==$version from the package index" ;;
  esac
  echo "::group::Install pp-attr-lint ($spec)"
  group_open=1
  if ! "$python" -m venv "$venv"; then
    fail "installing pp-attr-lint failed: \`$python -m venv $venv\` could not create the virtual environment"
  fi
  # pip's stderr is kept to quote its reason (e.g. "No matching distribution found for ...")
  pip_log="$(mktemp "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/pp-attr-lint-pip.XXXXXX" 2>/dev/null)" || pip_log=""
  pip=("$venv/bin/python" -m pip install --disable-pip-version-check --quiet "$spec")
  set +e
  if [ -n "$pip_log" ]; then "${pip[@]}" 2>"$pip_log"; else "${pip[@]}"; fi
  rc=$?
  set -e
  reason=""
  if [ -n "$pip_log" ]; then
    cat "$pip_log" >&2
    reason="$(grep '^ERROR:' "$pip_log" | tail -n 1 || true)"
    [ -n "$reason" ] || reason="$(grep -v '^[[:space:]]*$' "$pip_log" | tail -n 1 || true)"
    rm -f "$pip_log"
  fi
  if [ "$rc" -ne 0 ]; then
    msg="installing $what with pip failed (exit $rc)${reason:+: $reason}"
    if [ -n "$version" ]; then
      msg="$msg. \`version: $INPUT_VERSION\` installs a release from the package index (PyPI), and pp-attr-lint may have none published there yet: leave \`version\` empty to install the action's own checkout (the ref in \`uses:\`)"
    fi
    fail "$msg"
  fi
  if [ ! -x "$venv/bin/pp-attr-lint" ]; then
    fail "installing $what did not provide $venv/bin/pp-attr-lint"
  fi
  echo "::endgroup::"
  group_open=""
  tool=("$venv/bin/pp-attr-lint")
fi
if ! "${tool[@]}" --version; then
  fail "\`${tool[*]} --version\` failed: the installed pp-attr-lint does not run"
fi

if [ -n "$sarif" ]; then
  # the SARIF report never decides the exit code; the annotated run below does
  set +e
  "${tool[@]}" check --output-format sarif --output-file "$sarif" --exit-zero "${extra[@]}" -- "${paths[@]}"
  rc=$?
  set -e
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then  # 3: written; the engine is missing (the run below says so)
    echo "::warning title=pp-attr-lint::writing the SARIF report failed (exit $rc)"
  fi
fi

# PR mode: the annotations (and the exit code) are the findings the base commit does not have
baseline="${INPUT_BASELINE_COMMIT:-auto}"
case "$baseline" in
  auto)
    case "${GITHUB_EVENT_NAME:-}" in
      pull_request | pull_request_target)
        baseline="${PP_ATTR_LINT_PR_BASE:-}"
        [ -n "$baseline" ] || fail "baseline-commit: auto on a ${GITHUB_EVENT_NAME} event, but the event names no base commit (github.event.pull_request.base.sha)"
        ;;
      *) baseline="" ;;
    esac
    ;;
  none | "") baseline="" ;;
esac
base_args=()
if [ -n "$baseline" ]; then
  if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
    # a shallow checkout (actions/checkout's default fetch-depth: 1) lacks the base commit
    echo "::group::Fetch the baseline commit $baseline"
    group_open=1
    if ! git fetch --no-tags --depth=1 origin "$baseline"; then
      fail "baseline-commit: cannot fetch $baseline from origin; check out with \`fetch-depth: 0\` or set \`baseline-commit: none\`"
    fi
    echo "::endgroup::"
    group_open=""
  fi
  base_args=(--baseline-commit "$baseline")
  echo "pp-attr-lint: PR mode: reporting only the findings that $baseline does not have"
fi

set +e
"${tool[@]}" check --output-format github "${base_args[@]}" "${extra[@]}" -- "${paths[@]}"
rc=$?
set -e
write_outputs "$rc" "$sarif"
exit "$rc"
