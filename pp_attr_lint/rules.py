"""Rules as data: load and check the YAML rule files (``rules/*.yaml`` and a project's own).

A rule file is one mapping; see ``rules/PPA001.yaml`` for every key.  Required keys: ``code``
(``[A-Z]+[0-9]+``), ``name``, ``attributes`` (non-empty list of identifiers), ``message`` (a
``str.format`` template with ``receiver``, ``wrapper``, ``attr``, ``inner``, ``path``, ``where``).
Optional: ``summary``, ``fix`` (``applicability``: safe|unsafe|display-only, ``message``),
``url``, ``factories``, ``attributeless_bases``, ``transparent_decorators``, ``max_path_depth``,
``docs`` (``what_it_does``, ``why_bad``, ``example``, ``fix``).
"""

from __future__ import annotations

import marshal
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .settings import Factory, Settings

_CODE = re.compile(r"^[A-Z]+[0-9]+$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
APPLICABILITIES = ("safe", "unsafe", "display-only")
_KEYS = {
    "code", "name", "summary", "attributes", "message", "fix", "url", "factories",
    "attributeless_bases", "transparent_decorators", "max_path_depth", "docs",
}
_FACTORY_KEYS = {"name", "keyword", "registry_module", "tables", "package"}


class RuleError(ValueError):
    """A rule file is missing, not YAML, or does not follow the rule format (exit code 2)."""


@dataclass(frozen=True)
class Rule:
    """One rule: which attribute reads it watches and how findings and fixes read."""

    code: str
    name: str
    summary: str
    attributes: tuple[str, ...]
    message: str
    fix_applicability: str | None
    fix_message: str | None
    url: str | None
    settings: Settings
    docs: dict = field(default_factory=dict, compare=False, hash=False)
    source: str = ""


def _err(src: str, msg: str) -> RuleError:
    return RuleError(f"{src}: {msg}")


def _yaml(text: str, src: str):
    import yaml  # imported only when a rule file is not in the parse cache

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise _err(src, f"not valid YAML: {e}") from None


def parse_rule(text: str, src: str, data=None) -> Rule:
    """Parse one rule from YAML ``text`` (or from ``data``, its already-parsed form); ``src``
    names it in error messages.

    Raises:
        RuleError: not YAML, not a mapping, an unknown or missing key, or a bad value.
    """
    if data is None:
        data = _yaml(text, src)
    if not isinstance(data, dict):
        raise _err(src, "a rule file must hold one mapping")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise _err(src, f"unknown key(s): {', '.join(unknown)}")
    for key in ("code", "name", "attributes", "message"):
        if key not in data:
            raise _err(src, f"missing required key `{key}`")
    code = data["code"]
    if not isinstance(code, str) or not _CODE.match(code):
        raise _err(src, f"`code` must look like PPA001, got {code!r}")
    attrs = data["attributes"]
    if not isinstance(attrs, list) or not attrs or not all(isinstance(a, str) and _IDENT.match(a) for a in attrs):
        raise _err(src, "`attributes` must be a non-empty list of identifiers")
    fix = data.get("fix") or {}
    if not isinstance(fix, dict):
        raise _err(src, "`fix` must be a mapping")
    applicability = fix.get("applicability")
    if fix and applicability not in APPLICABILITIES:
        raise _err(src, f"`fix.applicability` must be one of {', '.join(APPLICABILITIES)}")
    factories = []
    for f in data.get("factories") or []:
        if not isinstance(f, dict) or set(f) != _FACTORY_KEYS:
            raise _err(src, f"each factory needs exactly the keys {', '.join(sorted(_FACTORY_KEYS))}")
        factories.append(Factory(**{k: str(v) for k, v in f.items()}))
    for key in ("attributeless_bases", "transparent_decorators"):
        v = data.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise _err(src, f"`{key}` must be a list of strings")
    depth = data.get("max_path_depth", 2)
    if not isinstance(depth, int) or not 1 <= depth <= 4:
        raise _err(src, "`max_path_depth` must be an integer from 1 to 4")
    settings = Settings(
        attributeless_bases=tuple(data.get("attributeless_bases") or ("builtins.object", "torch.nn.Module")),
        transparent_decorators=tuple(data.get("transparent_decorators") or ()),
        factories=tuple(factories),
        max_path_depth=depth,
    )
    return Rule(
        code=code,
        name=str(data["name"]),
        summary=str(data.get("summary") or data["name"]),
        attributes=tuple(attrs),
        message=" ".join(str(data["message"]).split()),
        fix_applicability=applicability,
        fix_message=fix.get("message"),
        url=data.get("url"),
        settings=settings,
        docs=dict(data.get("docs") or {}),
        source=src,
    )


def builtin_rule_files() -> list[Path]:
    """The rule files shipped with pp-attr-lint (the repository's ``rules/`` folder)."""
    checkout = Path(__file__).resolve().parent.parent / "rules"
    if (checkout / "PPA001.yaml").is_file():  # a source checkout or an editable install
        folder = checkout
    else:  # an installed wheel: setuptools maps rules/ to pp_attr_lint/builtin_rules (pyproject.toml)
        folder = Path(__file__).resolve().parent / "builtin_rules"
    return sorted(p for p in folder.iterdir() if p.name.endswith((".yaml", ".yml")))


def load_rule_file(path: Path, cache_dir: Path | None = None, label: str | None = None) -> Rule:
    """Load one rule file.  With ``cache_dir``, the parsed YAML is kept there keyed by the file's
    path, mtime and size, so that an unchanged rule file costs neither a YAML parse nor importing
    PyYAML.  Raises :class:`RuleError` (also when the file is unreadable)."""
    src = label or str(path)
    memo = None
    if cache_dir is not None:
        try:
            st = os.stat(path)
            import hashlib

            tag = hashlib.blake2b(os.path.abspath(path).encode(), digest_size=8).hexdigest()
            memo = cache_dir / "rules" / f"{tag}-{st.st_mtime_ns}-{st.st_size}"
            with open(memo, "rb") as f:
                cached_path, data = marshal.load(f)
            if cached_path == os.path.abspath(path):
                return parse_rule("", src, data)
        except (OSError, EOFError, ValueError, TypeError):
            pass
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise _err(src, f"cannot read rule file: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise _err(src, "rule file is not UTF-8") from None
    data = _yaml(text, src)
    rule = parse_rule(text, src, data)
    if memo is not None:
        try:
            from .project import _atomic_write

            _atomic_write(memo, marshal.dumps((os.path.abspath(path), data)))
        except (OSError, ValueError):
            pass
    return rule


def all_rules(extra: list[Path] = (), cache_dir: Path | None = None) -> list[Rule]:
    """Built-in rules plus ``extra`` files; raises :class:`RuleError` on a duplicate code."""
    rules = [load_rule_file(p, cache_dir, f"rules/{p.name}") for p in builtin_rule_files()]
    rules += [load_rule_file(p, cache_dir) for p in extra]
    seen: dict[str, str] = {}
    for r in rules:
        if r.code in seen:
            raise RuleError(f"{r.source}: rule code {r.code} is already defined in {seen[r.code]}")
        seen[r.code] = r.source
    return rules
