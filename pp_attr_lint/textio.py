"""Reading and writing source files without losing a byte (encoding, BOM, line endings, mode), and
how paths are shown."""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import sys
import tempfile
import tokenize
from dataclasses import dataclass, field
from pathlib import Path


def tolerant_streams() -> None:
    """Let stdout and stderr write what their encoding cannot (a path with an ``é`` under
    ``PYTHONIOENCODING=ascii`` or a ``C`` locale) as backslash escapes instead of raising
    ``UnicodeEncodeError`` in the middle of a report."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError, AttributeError):
                pass


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it is below it, else unchanged."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@dataclass(frozen=True)
class SourceFile:
    """A decoded source file and what is needed to write it back the same way."""

    text: str  # decoded, BOM removed, line endings as in the file
    encoding: str  # the PEP 263 encoding (``utf-8-sig`` when the file has a BOM)
    newline: str  # the first line ending in the file ("\n", "\r\n" or "\r")
    raw: bytes | None = field(default=None, compare=False, repr=False)  # the bytes read, when read from a file


class ChangedOnDisk(Exception):
    """The file's bytes are no longer the ones it was read with: it was not written."""


def decode_source(data: bytes) -> str:
    """Decode Python source bytes as the interpreter would (BOM, ``# -*- coding: ... -*-``).

    Raises:
        UnicodeDecodeError: the bytes are not valid in the declared encoding.
        SyntaxError: the encoding declaration is unknown or contradicts the BOM.
    """
    return data.decode(detect_encoding(data))


def detect_encoding(data: bytes) -> str:
    """The PEP 263 encoding of Python source bytes (``utf-8-sig`` with a BOM).

    :func:`tokenize.detect_encoding` reports a non-UTF-8 byte in the first two lines of a file
    without a coding line as ``invalid or missing encoding declaration``, without its position;
    the UTF-8 decoding error is raised instead then, so that the message says where the byte is.

    Raises:
        UnicodeDecodeError: no coding line, and the first lines are not UTF-8.
        SyntaxError: the encoding declaration is unknown or contradicts the BOM.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:
        if "invalid or missing encoding declaration" in str(e.msg):
            bom = data.startswith(b"\xef\xbb\xbf")
            try:
                data[3 if bom else 0:].decode("utf-8")
            except UnicodeDecodeError as d:  # positions in the file, BOM included
                raise UnicodeDecodeError(d.encoding, data, d.start + 3 * bom, d.end + 3 * bom, d.reason) from None
        raise
    return encoding


def file_kind(mode: int) -> str:
    """What a ``st_mode`` that is not a regular file is, in words (``"a named pipe"``)."""
    for test, what in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return what
    return "not a regular file"


def read_regular(path: "str | Path") -> bytes:
    """The bytes of the regular file ``path``.  A named pipe, a device or a socket (or a link to
    one) is never read: opening does not wait for a writer (``O_NONBLOCK``), and ``OSError``
    (``EINVAL``, "not a regular file: a named pipe") is raised before any read, as a pipe can
    block forever and ``/dev/zero`` never ends.  Raises ``OSError`` as :func:`open` does (a
    folder: ``IsADirectoryError``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):  # as open() says it
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file: {file_kind(st.st_mode)}", str(path))
        # the size as stated, then until the end (a file that grows meanwhile is read whole)
        chunks = []
        want = st.st_size + 1
        while True:
            got = os.read(fd, want)
            if not got:
                return b"".join(chunks)
            chunks.append(got)
            want = 1 << 16
    finally:
        os.close(fd)


def read_source(path: "str | Path") -> SourceFile:
    """Read and decode ``path`` (a regular file: see :func:`read_regular`).  Raises ``OSError``,
    ``UnicodeDecodeError`` or ``SyntaxError``."""
    return source_from_bytes(read_regular(path))


def source_from_bytes(data: bytes) -> SourceFile:
    """Decode a file's ``data`` as :func:`read_source` does; ``raw`` keeps ``data``."""
    encoding = detect_encoding(data)
    text = data.decode(encoding)
    newline = "\n"
    for i, ch in enumerate(text):
        if ch == "\r":
            newline = "\r\n" if text[i + 1:i + 2] == "\n" else "\r"
            break
        if ch == "\n":
            break
    return SourceFile(text=text, encoding=encoding, newline=newline, raw=data)


def write_source_atomic(path: Path, text: str, original: SourceFile) -> None:
    """Write ``text`` to ``path`` in the original's encoding (BOM included) atomically.

    The new content goes to a temporary file in the same folder, gets the old file's permission
    bits, is flushed to disk and then replaces the file with :func:`os.replace`; an interrupted
    run leaves either the old or the new file, never a mix.  A symbolic link is followed and its
    target replaced.  When ``original`` was read from the file (``raw``), the file must still
    hold those bytes immediately before the replacement: otherwise it is left as it is (the edit
    made meanwhile is kept) and :class:`ChangedOnDisk` is raised.  Raises ``OSError`` (nothing is
    changed then) or ``UnicodeEncodeError``.
    """
    target = Path(os.path.realpath(path))
    mode = stat.S_IMODE(os.stat(target).st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        # replacing it by rename would succeed in a writable folder; a plain write would not
        raise PermissionError(errno.EACCES, "file is read-only", str(path))
    atomic_write_bytes(target, text.encode(original.encoding), mode=mode, durable=True, expect=original.raw)


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None, durable: bool = False,
                       expect: bytes | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and
    :func:`os.replace`, so that readers see the old or the new content, never a part.  ``mode``
    sets the permission bits; ``durable`` flushes to disk before the rename.  With ``expect``,
    ``path`` is read again immediately before the rename and replaced only if it still holds
    exactly those bytes (else :class:`ChangedOnDisk`).  Raises ``OSError`` (the temporary file is
    removed then)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=temporary_prefix(os.path.basename(path)),
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if expect is not None:
            with open(path, "rb") as f:
                if f.read() != expect:
                    raise ChangedOnDisk(str(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# a temporary file of atomic_write_bytes: `.<name>.pp-attr-lint-<pid>-<random>.tmp`, so that a
# later run can tell one left by a killed process (its pid no longer runs) and remove it
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.pp-attr-lint-(?P<pid>[0-9]+)-[A-Za-z0-9_]+\.tmp")


def temporary_prefix(name: str) -> str:
    """The start of the name of a temporary file that replaces ``name`` (see :data:`_TEMPORARY`)."""
    return f".{name}.pp-attr-lint-{os.getpid()}-"


def stale_temporary(name: str) -> bool:
    """Whether the file name ``name`` is a temporary file of :func:`atomic_write_bytes` whose
    process no longer runs (on this machine): left by a killed run."""
    m = _TEMPORARY.fullmatch(name)
    if m is None:
        return False
    pid = int(m.group("pid"))
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False  # another user's process runs under that pid (or it cannot be told)
    return False


def remove_stale_temporaries(paths: "list[str]", folders: "set[str] | tuple" = ()) -> list[str]:
    """Remove the temporary files among ``paths`` and in ``folders`` that killed runs left (see
    :func:`stale_temporary`; ``paths`` are taken as stale already); the removed paths.  A file
    that cannot be removed is left."""
    found = list(paths)
    for d in folders:
        try:
            with os.scandir(d) as it:
                found += [e.path for e in it if e.name[:1] == "." and stale_temporary(e.name)]
        except OSError:
            continue
    removed = []
    for p in dict.fromkeys(found):
        try:
            os.unlink(p)
        except OSError:
            continue
        removed.append(p)
    return removed


_PEP695 = (
    (re.compile(r"type\s+[A-Za-z_]\w*\s*[\[=]"), "a `type` alias statement (`type X = ...`)"),
    (re.compile(r"(?:async\s+)?def\s+[A-Za-z_]\w*\s*\["), "a generic function (`def f[T](...)`)"),
    (re.compile(r"class\s+[A-Za-z_]\w*\s*\["), "a generic class (`class C[T]: ...`)"),
)


def explain_syntax_error(msg: str, line: str | None, version: tuple[int, int] | None = None) -> str:
    """``msg`` of a :class:`SyntaxError` raised by this Python's parser, with the reason when
    ``line`` (the line it points at) is syntax of a newer Python: PEP 695's type parameter syntax
    (``type X = int``, ``def f[T](x: T)``, ``class C[T]``) is Python 3.12's, and 3.11 says only
    ``invalid syntax`` about it."""
    version = version or sys.version_info[:2]
    if version >= (3, 12) or not line:
        return msg
    text = line.strip()
    for pattern, what in _PEP695:
        if pattern.match(text):
            return (f"{msg}: {what} is Python 3.12 syntax (PEP 695), which this Python "
                    f"({version[0]}.{version[1]}) cannot parse; run pp-attr-lint with Python 3.12 or later")
    return msg
