"""The rule registry: find the rule folders (``rules/<CODE>/``) and a project's own rule files.

A built-in rule is one folder (see :mod:`pp_attr_lint.rule_api`): ``rule.py`` defining ``RULE`` or
``rule.yaml`` (a data rule of the ``wrapper-attribute`` kind), ``README.md`` with its documentation,
``cases/`` with its annotated cases.  A project adds rules of the ``wrapper-attribute`` kind with
YAML files (``rules = ["lint/embed_tokens.yaml"]`` in ``[tool.pp-attr-lint]``).

A rule file is one mapping; see ``rules/PPA001/rule.yaml``.  Required keys: ``code``
(``[A-Z]+[0-9]+``), ``name``, ``attributes`` (non-empty list of identifiers), ``message`` (a
``str.format`` template with ``receiver``, ``wrapper``, ``attr``, ``inner``, ``path``, ``where``,
``fixed``; checked when the rule loads: an unknown or positional field is a :class:`RuleError`).
Optional: ``kind`` (``wrapper-attribute``), ``default`` (false: enabled only when selected by
its code), ``property_message`` (the message of a read that a property of the attribute's own name
returns, with ``owner`` also: the class of the property), ``summary``, ``fix`` (``applicability``:
safe|unsafe|display-only, ``message``: a template with ``fixed``, ``path``, ``attr``), ``url``, ``factories``, ``attributeless_bases``,
``transparent_decorators`` (added to the shared facts of :mod:`pp_attr_lint.facts`),
``max_path_depth``, ``docs`` (``what_it_does``, ``why_bad``, ``example``, ``fix``, ``references``;
a folder's ``README.md`` takes precedence).
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import re
import sys
from pathlib import Path

from .rule_api import Rule
from .settings import Factory, Settings

__all__ = ["Rule", "RuleError", "all_rules", "builtin_rule_folder", "load_rule_file", "parse_rule", "parse_docs"]

_CODE = re.compile(r"^[A-Z]+[0-9]+$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
APPLICABILITIES = ("safe", "unsafe", "display-only")
KINDS = ("wrapper-attribute",)
_KEYS = {
    "code", "name", "summary", "attributes", "message", "fix", "url", "factories", "kind", "default",
    "property_message",
    "attributeless_bases", "transparent_decorators", "max_path_depth", "docs",
}
_FACTORY_KEYS = {"name", "keyword", "registry_module", "tables", "package"}
# README.md section headings (ruff's) -> docs keys
DOC_SECTIONS = {
    "What it does": "what_it_does",
    "Why is this bad?": "why_bad",
    "Example": "example",
    "Fix safety": "fix",
    "References": "references",
}


class RuleError(ValueError):
    """A rule file is missing, not YAML, or does not follow the rule format (exit code 2)."""


def _err(src: str, msg: str) -> RuleError:
    return RuleError(f"{src}: {msg}")


def _yaml(text: str, src: str):
    import yaml  # imported only when a rule file is not in the parse cache

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise _err(src, f"not valid YAML: {e}") from None


# the fields a wrapper-attribute rule's templates may name (see kinds/wrapper_analysis.py)
MESSAGE_FIELDS = ("receiver", "wrapper", "attr", "inner", "path", "where", "fixed")
# `property_message`: also the class whose property of the attribute's name makes the read
PROPERTY_MESSAGE_FIELDS = MESSAGE_FIELDS + ("owner",)
FIX_MESSAGE_FIELDS = ("fixed", "path", "attr")


def check_template(template, fields: tuple[str, ...], key: str, src: str) -> str:
    """``template`` if it is a ``str.format`` template that names only ``fields`` (and formats
    with them); else :class:`RuleError` naming the field (``key``: the rule file's key, for the
    message)."""
    import string

    if not isinstance(template, str):
        raise _err(src, f"`{key}` must be a string")
    allowed = ", ".join(f"{{{f}}}" for f in fields)
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as e:
        raise _err(src, f"`{key}` is not a valid template ({e}); write a literal brace as {{{{ or }}}}; "
                        f"fields: {allowed}") from None
    for _, name, _spec, _conv in parts:
        if name is None:
            continue
        root = re.match(r"[^.\[]*", name).group(0)
        if root == "" or root.isdigit():
            raise _err(src, f"`{key}` has a positional field `{{{name}}}`; name one of {allowed}")
        if root not in fields:
            raise _err(src, f"`{key}` names an unknown field `{{{name}}}`; the fields are {allowed}")
    try:
        template.format(**{f: "x" for f in fields})
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as e:
        raise _err(src, f"`{key}` cannot be formatted: {type(e).__name__}: {e}; the fields are {allowed}") from None
    return template


def parse_rule(text: str, src: str, data=None) -> Rule:
    """Parse one data rule from YAML ``text`` (or from ``data``, its already-parsed form); ``src``
    names it in error messages.  Returns a :class:`pp_attr_lint.kinds.wrapper.WrapperAttributeRule`.

    Raises:
        RuleError: not YAML, not a mapping, an unknown or missing key, or a bad value.
    """
    from .kinds.wrapper import WrapperAttributeRule

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
    if data.get("kind", KINDS[0]) not in KINDS:
        raise _err(src, f"`kind` must be one of {', '.join(KINDS)} (rules of other kinds are Python: rule.py)")
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
    message = " ".join(check_template(data["message"], MESSAGE_FIELDS, "message", src).split())
    if fix.get("message") is not None:
        check_template(fix["message"], FIX_MESSAGE_FIELDS, "fix.message", src)
    property_message = ""
    if data.get("property_message") is not None:
        property_message = " ".join(check_template(data["property_message"], PROPERTY_MESSAGE_FIELDS,
                                                   "property_message", src).split())
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
        attributeless_bases=tuple(data.get("attributeless_bases") or ()),
        transparent_decorators=tuple(data.get("transparent_decorators") or ()),
        factories=tuple(factories),
    )
    default = data.get("default", True)
    if not isinstance(default, bool):
        raise _err(src, "`default` must be true or false")
    docs = data.get("docs") or {}
    if not isinstance(docs, dict):
        raise _err(src, "`docs` must be a mapping")
    return WrapperAttributeRule(
        code=code,
        name=str(data["name"]),
        summary=str(data.get("summary") or data["name"]),
        attributes=tuple(attrs),
        message=message,
        property_message=property_message,
        fix_applicability=applicability,
        fix_message=fix.get("message"),
        url=data.get("url"),
        settings=settings,
        max_path_depth=depth,
        default=default,
        docs=dict(docs),
        source=src,
    )


def parse_docs(text: str) -> dict:
    """A rule folder's ``README.md`` as docs: ``## What it does`` -> ``what_it_does`` and so on
    (see ``DOC_SECTIONS``); the ``# title`` line is dropped, unknown sections are kept under their
    heading.  Fenced code blocks are kept as they are."""
    docs: dict[str, str] = {}
    key = None
    buf: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            if key:
                docs[key] = "\n".join(buf).strip() + "\n"
            head = line[3:].strip()
            key, buf = DOC_SECTIONS.get(head, head), []
        elif key is not None:
            buf.append(line)
    if key:
        docs[key] = "\n".join(buf).strip() + "\n"
    return docs


def builtin_rule_folder() -> Path:
    """The folder of the rules shipped with pp-attr-lint (the repository's ``rules/``)."""
    checkout = Path(__file__).resolve().parent.parent / "rules"
    if (checkout / "PPA001" / "rule.yaml").is_file():  # a source checkout or an editable install
        return checkout
    # an installed wheel: setuptools maps rules/ to pp_attr_lint/builtin_rules (pyproject.toml)
    return Path(__file__).resolve().parent / "builtin_rules"


def builtin_rule_dirs() -> list[Path]:
    """One folder per built-in rule, sorted by code."""
    folder = builtin_rule_folder()
    return sorted(p for p in folder.iterdir() if p.is_dir() and _CODE.match(p.name)
                  and ((p / "rule.py").is_file() or (p / "rule.yaml").is_file()))


def _load_python_rule(folder: Path) -> Rule:
    """Import ``folder/rule.py`` (as ``pp_attr_lint_rules.<CODE>``) and return its ``RULE``."""
    name = f"pp_attr_lint_rules.{folder.name}"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, folder / "rule.py")
        if spec is None or spec.loader is None:  # pragma: no cover - a file that exists always has a spec
            raise RuleError(f"{folder}/rule.py: cannot be imported")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception as e:  # a broken rule is a configuration error, not a crash
            del sys.modules[name]
            raise RuleError(f"rules/{folder.name}/rule.py: cannot be imported: {type(e).__name__}: {e}") from None
    rule = getattr(mod, "RULE", None)
    if not isinstance(rule, Rule) or rule.code != folder.name:
        raise RuleError(f"rules/{folder.name}/rule.py must define RULE, a Rule with code {folder.name}")
    return rule


def _load_folder(folder: Path, cache_dir: Path | None) -> Rule:
    if (folder / "rule.py").is_file():
        rule = _load_python_rule(folder)
        rule.source = f"rules/{folder.name}/rule.py"
    else:
        rule = load_rule_file(folder / "rule.yaml", cache_dir, f"rules/{folder.name}/rule.yaml")
    readme = folder / "README.md"
    if readme.is_file() and not rule.docs:
        rule.docs = parse_docs(readme.read_text(encoding="utf-8"))
    return rule


def load_rule_file(path: Path, cache_dir: Path | None = None, label: str | None = None) -> Rule:
    """Load one YAML rule file.  With ``cache_dir``, the parsed YAML is kept there keyed by the
    file's path, mtime and size, so that an unchanged rule file costs neither a YAML parse nor
    importing PyYAML.  Raises :class:`RuleError` (also when the file is unreadable)."""
    src = label or str(path)
    memo = None
    if cache_dir is not None:
        try:
            st = os.stat(path)
            import hashlib

            tag = hashlib.blake2b(os.path.abspath(path).encode(), digest_size=8).hexdigest()
            memo = cache_dir / "rules" / f"{tag}-{st.st_mtime_ns}-{st.st_size}"
            from .workspace.cache import read_sealed

            cached_path, data = read_sealed(memo)
            if cached_path == os.path.abspath(path):
                return parse_rule("", src, data)
        except (OSError, EOFError, ValueError, TypeError, RuleError):
            pass  # missing, or damaged (a rule file that does not load is never kept): read the file
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
            from .workspace.cache import atomic_write, seal

            atomic_write(memo, seal(marshal.dumps((os.path.abspath(path), data))))
        except (OSError, ValueError):
            pass
    return rule


def builtin_rule(code: str) -> Rule | None:
    """The built-in Python rule ``code`` (imported once per process), ``None`` when there is no
    such folder or it holds no ``rule.py``; raises :class:`RuleError` when it does not import."""
    folder = builtin_rule_folder() / code
    if not _CODE.match(code) or not (folder / "rule.py").is_file():
        return None
    return _load_python_rule(folder)


def all_rules(extra: list[Path] = (), cache_dir: Path | None = None) -> list[Rule]:
    """Built-in rules plus ``extra`` YAML files; raises :class:`RuleError` on a duplicate code."""
    rules = [_load_folder(p, cache_dir) for p in builtin_rule_dirs()]
    rules += [load_rule_file(p, cache_dir) for p in extra]
    seen: dict[str, str] = {}
    for r in rules:
        if r.code in seen:
            raise RuleError(f"{r.source}: rule code {r.code} is already defined in {seen[r.code]}")
        seen[r.code] = r.source
    return rules
