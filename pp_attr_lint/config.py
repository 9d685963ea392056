"""Configuration: ``[tool.pp-attr-lint]`` in ``pyproject.toml`` (or a TOML file given with ``--config``).

Keys (all optional)::

    [tool.pp-attr-lint]
    select = ["PPA001"]            # codes or code prefixes ("PPA", "ALL"); default: all rules
    ignore = []                    # codes or prefixes to drop
    exclude = [...]                # replaces the default excludes (fnmatch globs)
    extend-exclude = ["tests/fixtures"]
    per-file-ignores = { "tests/*" = ["PPA001"] }
    rules = ["lint/my_rules.yaml"] # extra rule files of the project's own
    src = ["."]                    # folders to resolve absolute imports from
    cache-dir = ".pp-attr-lint-cache"
    python = ".venv/bin/python"    # the environment to resolve other imports from ("none": none)
    unresolved = "error"           # reads that cannot be judged are findings (default "report")

Relative paths are relative to the folder of the file that holds them.  An unknown key or rule code
raises :class:`ConfigError` (exit code 2).
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .rule_api import Rule
from .rule_registry import RuleError, all_rules
from .workspace.files import DEFAULT_EXCLUDE

KEYS = {"select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores", "rules", "src",
        "cache-dir", "python", "unresolved"}
UNRESOLVED = ("report", "error")


class ConfigError(ValueError):
    """A configuration file or option is wrong (exit code 2)."""


@dataclass
class Config:
    """Resolved settings for one run."""

    path: Path | None = None
    select: list[str] = field(default_factory=lambda: ["ALL"])
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    rule_files: list[Path] = field(default_factory=list)
    src: list[Path] = field(default_factory=list)
    cache_dir: Path | None = None
    python: str | None = None
    unresolved: str = "report"

    @property
    def base(self) -> Path:
        return self.path.parent if self.path else Path.cwd()


def find_config(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.pp-attr-lint]`` table, from ``start`` up."""
    d = start.resolve()
    try:
        if d.is_file():
            d = d.parent
    except OSError:
        d = d.parent
    for cand in [d, *d.parents]:
        p = cand / "pyproject.toml"
        try:
            if not p.is_file():
                continue
            raw_bytes = p.read_bytes()
        except OSError:  # a folder that cannot be searched or a file that cannot be read
            continue
        try:
            data = tomllib.loads(raw_bytes.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            if b"pp-attr-lint" in raw_bytes:
                return p  # our table is there but broken: load_config reports it (exit 2)
            continue
        tool = data.get("tool", {})
        if isinstance(tool, dict) and "pp-attr-lint" in tool:
            return p
        if not isinstance(tool, dict) and b"pp-attr-lint" in raw_bytes:
            return p
    return None


def _str_list(v, key: str, src: Path) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ConfigError(f"{src}: `{key}` must be a list of strings")
    return v


def load_config(path: Path | None, explicit: bool = False) -> Config:
    """Read the settings of ``path`` (a ``pyproject.toml`` or a plain TOML file).

    Raises:
        ConfigError: the file cannot be read or parsed, an explicit pyproject has no table, or a
            key or value is unknown / of the wrong type.
    """
    cfg = Config()
    if path is None:
        return cfg
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read configuration: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict):
            raise ConfigError(f"{path}: `tool` must be a table")
        table = tool.get("pp-attr-lint")
        if table is None:
            if explicit:
                raise ConfigError(f"{path}: no [tool.pp-attr-lint] table")
            table = {}
    else:
        table = data
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.pp-attr-lint] must be a table, not {type(table).__name__}")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in pp-attr-lint configuration: {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(KEYS))})")
    cfg.path = path.resolve()
    base = cfg.base
    if "select" in table:
        cfg.select = _str_list(table["select"], "select", path)
    if "extend-select" in table:
        cfg.extend_select = _str_list(table["extend-select"], "extend-select", path)
    if "ignore" in table:
        cfg.ignore = _str_list(table["ignore"], "ignore", path)
    if "exclude" in table:
        cfg.exclude = _str_list(table["exclude"], "exclude", path)
    if "extend-exclude" in table:
        cfg.exclude += _str_list(table["extend-exclude"], "extend-exclude", path)
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{path}: `per-file-ignores` must be a table of glob = [codes]")
        cfg.per_file_ignores = {k: _str_list(v, f"per-file-ignores.{k}", path) for k, v in pfi.items()}
    if "rules" in table:
        cfg.rule_files = [base / p for p in _str_list(table["rules"], "rules", path)]
    if "src" in table:
        cfg.src = [base / p for p in _str_list(table["src"], "src", path)]
    if "cache-dir" in table:
        if not isinstance(table["cache-dir"], str):
            raise ConfigError(f"{path}: `cache-dir` must be a string")
        cfg.cache_dir = base / table["cache-dir"]
    if "python" in table:
        if not isinstance(table["python"], str) or not table["python"]:
            raise ConfigError(f"{path}: `python` must be the path of a Python interpreter or \"none\"")
        cfg.python = table["python"] if table["python"] == "none" else str(base / table["python"])
    if "unresolved" in table:
        if table["unresolved"] not in UNRESOLVED:
            raise ConfigError(f"{path}: `unresolved` must be one of {', '.join(repr(u) for u in UNRESOLVED)}")
        cfg.unresolved = table["unresolved"]
    return cfg


def _matches(code: str, sel: str) -> bool:
    return sel == "ALL" or code.startswith(sel)


def select_rules(cfg: Config, select: list[str] | None = None, ignore: list[str] | None = None,
                 extend_select: list[str] | None = None, cache_dir: Path | None = None) -> list[Rule]:
    """The enabled rules: all rules (built-in and ``cfg.rule_files``) filtered by select/ignore.

    Raises:
        ConfigError: a selector names no known rule, or a rule file is invalid.
    """
    try:
        rules = all_rules(cfg.rule_files, cache_dir)
    except RuleError as e:
        raise ConfigError(str(e)) from None
    sel = list(select if select is not None else cfg.select) + list(cfg.extend_select) + list(extend_select or [])
    ign = list(cfg.ignore) + list(ignore or [])
    codes = [r.code for r in rules]
    for s in sel + ign + [c for v in cfg.per_file_ignores.values() for c in v]:
        if not s.strip():
            raise ConfigError("an empty rule code in select / ignore / per-file-ignores")
        if not any(_matches(c, s) for c in codes):
            raise ConfigError(f"unknown rule code or prefix `{s}` (known: {', '.join(codes)})")
    # a rule that is not on by default needs its own code among the selectors
    return [r for r in rules
            if (any(_matches(r.code, s) for s in sel) if r.default else r.code in {s.upper() for s in sel})
            and not any(_matches(r.code, s) for s in ign)]


def per_file_ignore(cfg: Config):
    """A ``(path, code) -> bool`` predicate for ``per-file-ignores`` (globs relative to the
    configuration's folder, fnmatch)."""
    if not cfg.per_file_ignores:
        return None
    base = str(cfg.base)

    def ignored(path: str, code: str | None) -> bool:
        rel = os.path.relpath(path, base)
        for pat, codes in cfg.per_file_ignores.items():
            if fnmatch.fnmatchcase(rel, pat) or fnmatch.fnmatchcase(os.path.basename(path), pat):
                if code is not None and any(_matches(code, c) for c in codes):
                    return True
        return False

    return ignored
