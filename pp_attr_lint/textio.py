"""Reading and writing source files without losing a byte (encoding, BOM, line endings, mode), and
how paths are shown."""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass, field
from pathlib import Path


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
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def read_source(path: "str | Path") -> SourceFile:
    """Read and decode ``path``.  Raises ``OSError``, ``UnicodeDecodeError`` or ``SyntaxError``."""
    with open(path, "rb") as f:
        data = f.read()
    return source_from_bytes(data)


def source_from_bytes(data: bytes) -> SourceFile:
    """Decode a file's ``data`` as :func:`read_source` does; ``raw`` keeps ``data``."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
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
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{os.path.basename(path)}.", suffix=".tmp")
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
