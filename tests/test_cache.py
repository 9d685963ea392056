"""The summary cache (one pack per root) and the text prefilter's receiver scan."""

from __future__ import annotations

import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys

from helpers import FIXTURES, REPO, run_cli
from pp_attr_lint.index.prefilter import attribute_read_hit
from pp_attr_lint.workspace.cache import Cache, _read_pack

SEED = FIXTURES / "seed"


def _packs(cache) -> dict:
    got = {}
    for p in cache.rglob("sums-*"):
        got.update(_read_pack(p)[0])
    return got


def _json(r) -> list:
    return sorted(json.dumps(d, sort_keys=True) for d in json.loads(r.stdout))


def test_pack_follows_edits_and_survives_damage(tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(SEED, root)
    cache = tmp_path / "cache"
    args = ("check", ".", "--cache-dir", cache, "--output-format", "json", "-j", "1")
    cold = run_cli(*args, cwd=root)
    assert cold.rc == 1, cold.stderr
    before = _packs(cache)
    assert before  # the summaries were written

    edited = next(p for p in root.rglob("*.py") if "start_layer" in p.read_text())
    edited.write_text(edited.read_text() + "\n# edited\n")
    again = run_cli(*args, cwd=root)
    assert _json(again) == _json(cold)
    after = _packs(cache)
    assert len(after) == len(before)  # the old content's summary was replaced, not kept beside it
    assert set(after) != set(before)

    for p in cache.rglob("sums-*"):  # a damaged pack is read as empty and written anew
        p.write_bytes(b"PPS1\xff\xff\xff\x7fgarbage")
    for p in cache.rglob("memo-*"):
        p.unlink()
    damaged = run_cli(*args, cwd=root)
    assert (damaged.rc, _json(damaged)) == (cold.rc, _json(cold))
    assert set(_packs(cache)) == set(after)


def test_pack_merges_what_another_run_wrote(tmp_path):
    root = str(tmp_path)
    one, two = Cache(tmp_path / "c", "k"), Cache(tmp_path / "c", "k")
    for c, rel, digest in ((one, "a.py", "d1"), (two, "b.py", "d2")):
        c.stat_index(root)[rel] = (1, 1, digest, 1)
        c.mark(root)
        c.put_summary(digest, ("ok", {"from": rel}), root)
    one.flush()
    two.stat_index(root)["a.py"] = (1, 1, "d1", 1)  # both files are known to the second run
    two.flush()
    fresh = Cache(tmp_path / "c", "k")
    assert fresh.summary("d1", root) == ("ok", {"from": "a.py"})
    assert fresh.summary("d2", root) == ("ok", {"from": "b.py"})
    assert fresh.has_summary("d2", root) and not fresh.has_summary("d3", root)
    assert Cache(tmp_path / "c", "k", enabled=False).summary("d1", root) is None


def test_a_disabled_cache_with_memory_keeps_summaries_in_this_process_only(tmp_path):
    """``--fix --no-cache`` checks again after fixing: the summaries of the first check are kept
    in memory for it (copies, as from a pack), and nothing is read from or written to disk."""
    root = str(tmp_path)
    c = Cache(tmp_path / "c", "k", enabled=False, memory=True)
    value = ("ok", {"attrs": ["a"]})
    c.put_summary("d1", value, root)
    c.stat_index(root)["a.py"] = (1, 1, "d1", 1)
    c.mark(root)
    c.flush()
    got = c.summary("d1", root)
    assert got == value and got[1] is not value[1]
    assert c.has_summary("d1", root) and not c.has_summary("d2", root) and c.summary("d2", root) is None
    assert c.memo("m") is None
    assert not (tmp_path / "c").exists()
    plain = Cache(tmp_path / "c", "k", enabled=False)
    plain.put_summary("d1", value, root)
    assert plain.summary("d1", root) is None and not plain.has_summary("d1", root)


# the receiver test as a regular expression (what the prefilter did before it read bytes
# backward): `name .`, `.name .` or `) .` right before the attribute, blanks and `\` allowed
_BEFORE = re.compile(rb"(?:(\.?)[\s\\]*\b(\w+)|(\)))[\s\\]*\.[\s\\]*\Z")


def _oracle(data: bytes, attr: bytes = b"start_layer") -> bool:
    for m in re.finditer(rb"(?<!\w)" + attr + rb"(?!\w)", data):
        i, end = m.start(), m.end()
        prev = data[i - 1:i]
        if prev in (b'"', b"'") and data[end:end + 1] == prev:
            return True
        b = _BEFORE.search(data, max(0, i - 256), i)
        if b is not None and (b.group(3) or b.group(1) or b.group(2) != b"self"):
            return True
    return False


def test_prefilter_receiver_scan_matches_the_regular_expression():
    def hit(data):
        return attribute_read_hit(data, ["start_layer"])

    for text, want in ((b"self.start_layer", False), (b"x.start_layer", True), (b"a.self.start_layer", True),
                       (b"(m).start_layer", True), (b"x[0].start_layer", False), (b"start_layer = 1", False),
                       (b'getattr(m, "start_layer")', True), (b"m \\\n  . start_layer", True),
                       (b"foo. self.start_layer", True), (b"self.start_layers", False)):
        assert bool(hit(text)) is want, text
        assert _oracle(text) is want, text
    rng = random.Random(7)
    parts = [b"self", b"x", b".", b" ", b"\\\n", b"(", b")", b"]", b"start_layer", b"'", b'"', b"\n", b"a_b", b"\t"]
    for _ in range(20000):
        text = b"".join(rng.choice(parts) for _ in range(rng.randint(1, 12)))
        assert bool(hit(text)) is _oracle(text), text


def test_prefilter_passes_every_read_beside_an_import_of_the_same_name():
    """Module paths of import statements (``from vllm.model_executor.layers.linear import X``)
    read no attribute and are passed over; every program that ``ast`` parses and that reads the
    name on a receiver other than ``self`` still passes (lines joined by ``\\``, ``;``, CR)."""
    def reads(text):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        return any(isinstance(n, ast.Attribute) and n.attr == "layers"
                   and not (isinstance(n.value, ast.Name) and n.value.id == "self") for n in ast.walk(tree))

    for text, want in ((b"from vllm.model_executor.layers.linear import X\n", False),
                       (b"import a.layers as b\n", False), (b"import a.layers; m.layers\n", True),
                       (b"x = 1 \\\nimport a.layers\n", True), (b"from a import b\rm.layers\r", True)):
        assert attribute_read_hit(text, ["layers"]) is want, text
    rng = random.Random(11)
    lines = [b"from a.layers import b", b"import a.layers", b"import a.layers as c", b"m.layers", b"self.layers",
             b"x = m.layers", b"from a import (b,", b"c)", b"import os; m.layers", b"y = (1,", b"2)"]
    ends = [b"\n", b"\r\n", b"\r", b" \\\n", b"; "]
    for _ in range(5000):
        text = b"".join(rng.choice(lines) + rng.choice(ends) for _ in range(rng.randint(1, 6)))
        r = reads(text)
        if r:
            assert attribute_read_hit(text, ["layers"]), text


def _forking_case(tmp_path):
    """PPA301's case and enough small files for the scan to fork (``-j 2``)."""
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "rules" / "PPA301" / "cases" / "skipped_init" / "pkg", pkg)
    for k in range(7):
        (pkg / f"f{k}.py").write_text(f"x = {k}\n")
    return pkg


def test_damaged_pack_entries_are_made_anew(tmp_path):
    """A pack whose index still reads but whose entries do not (cut short, flipped bytes) is a
    cache miss for those entries, also in the forked scan that resolves ahead."""
    pkg = _forking_case(tmp_path)
    cache = tmp_path / "cache"
    args = ("check", "pkg", "--cache-dir", cache, "--output-format", "json", "-j", "2")
    expected = run_cli("check", "pkg", "--no-cache", "--output-format", "json", cwd=tmp_path)
    assert expected.rc == 1
    assert _json(run_cli(*args, cwd=tmp_path)) == _json(expected)
    for p in cache.rglob("sums-*"):
        data = p.read_bytes()
        p.write_bytes(data[:-20])  # the last entry cut short: the index names more than is there
    for p in pkg.glob("*.py"):
        os.utime(p)  # read again, found in the pack by content
    for _ in range(2):
        got = run_cli(*args, cwd=tmp_path)
        assert (got.rc, _json(got)) == (1, _json(expected)), got.stderr


def test_a_file_saved_during_a_run_is_read_again_next_time(tmp_path):
    """The stat index keeps a file's (mtime, size) from before its content was read: a file saved
    while a run reads it looks changed to the next run (which then reports the new content)."""
    pkg = _forking_case(tmp_path)
    eagle = pkg / "eagle.py"
    fixed = eagle.read_text().replace("nn.Module.__init__(self)\n        self.config = config\n"
                                      "        self.layers = [nn.Identity()]\n\n\nclass FixedEagleModel",
                                      "super().__init__(config, prefix)\n\n\nclass FixedEagleModel", 1)
    assert fixed != eagle.read_text()
    (tmp_path / "fixed.txt").write_text(fixed)
    script = tmp_path / "edit_during.py"
    script.write_text(
        "import os, sys\n"
        "from pp_attr_lint.workspace import project as P\n"
        "read = P.read_file_bytes\n"
        "def read_file_bytes(path):\n"
        "    data = read(path)\n"
        "    if path.endswith('eagle.py') and not os.path.exists(path + '.saved'):\n"
        "        open(path + '.saved', 'w').close()\n"
        "        with open(path, 'w') as f:  # the user saves an edit while the run reads the file\n"
        f"            f.write(open({str(tmp_path / 'fixed.txt')!r}).read())\n"
        "    return data\n"
        "P.read_file_bytes = read_file_bytes\n"
        "from pp_attr_lint.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    cache = tmp_path / "cache"
    for jobs in ("1", "2"):
        (pkg / "eagle.py.saved").unlink(missing_ok=True)
        eagle.write_text((REPO / "rules" / "PPA301" / "cases" / "skipped_init" / "pkg" / "eagle.py").read_text())
        shutil.rmtree(cache, ignore_errors=True)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        subprocess.run([sys.executable, str(script), "check", "pkg", "--cache-dir", str(cache), "-j", jobs, "-q"],
                       cwd=tmp_path, env=env, capture_output=True, timeout=120)
        assert eagle.read_text() == fixed
        now = run_cli("check", "pkg", "--no-cache", "--output-format", "json", cwd=tmp_path)
        again = run_cli("check", "pkg", "--cache-dir", cache, "--output-format", "json", "-j", jobs, cwd=tmp_path)
        assert _json(again) == _json(now), jobs
