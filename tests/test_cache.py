"""The summary cache (one pack per root) and the text prefilter's receiver scan."""

from __future__ import annotations

import json
import random
import re
import shutil

from helpers import FIXTURES, run_cli
from pp_attr_lint.project import Cache, _read_pack, make_prefilter

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
    hit = make_prefilter(frozenset({"start_layer"}))
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
