"""Reading and writing text files so that every byte the user did not edit survives.

A file is decoded once on open: its encoding, byte-order mark and line ending are remembered in a
``TextFormat`` and used again on save, so an untouched file saves byte-identically. Files that
are binary (NUL bytes outside UTF-16) or not valid in any encoding tried are refused with a
``NotTextError`` rather than opened as a mangled copy; so are files the editor could not show
without freezing (over ``MAX_FILE_BYTES``, or a line over ``MAX_LINE_CHARS``) and devices or pipes.
Saving is atomic: a temporary file in the same folder is written, flushed to disk and renamed over
the target (through a symbolic link), keeping its permissions, owner, group and extended
attributes; where those cannot be kept, the file has hard links, its folder takes no new file
or the file is mounted on its own, it is written in place. A read-only file is not replaced.

Pure Python, no Qt, so it can be tested on its own.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from typing import NamedTuple

from sfumato.model import regular_file

# Tried in order after the BOM checks; latin-1 is deliberately absent: it decodes anything,
# so a binary file would open as garbage instead of being refused.
FALLBACK_ENCODINGS = ("utf-8", "cp1252")
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: its BOM starts with UTF-16 LE's
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


MAX_FILE_BYTES = 64 << 20  # the editor holds a text several times over (document, layout, undo)
MAX_LINE_CHARS = 1 << 20  # Qt lays a line out in one piece: a longer one freezes the window for many seconds
TEMP_PREFIX, TEMP_SUFFIX = ".sfumato-", ".tmp"  # a save's temp file: .sfumato-<pid>-<random>.tmp
STALE_TEMP_SECONDS = 3600  # no save takes this long: an older temp file of ours was left by a killed one


class NotTextError(ValueError):
    """The file is binary or not valid text in any encoding tried; the message says which."""


@dataclass(frozen=True)
class TextFormat:
    """How a file's text is stored: ``encoding`` (a codec name), ``bom`` and ``newline``;
    ``mixed_newlines``: the file had other line endings too (saving makes them all ``newline``)."""

    encoding: str = "utf-8"
    bom: bool = False
    newline: str = "\n"
    mixed_newlines: bool = False

    @property
    def newline_name(self) -> str:
        return {"\n": "LF", "\r\n": "CRLF", "\r": "CR"}[self.newline]

    @property
    def label(self) -> str:
        return f"{self.encoding.upper()}{' BOM' if self.bom else ''} · {self.newline_name}"


def shown_path(path: str) -> str:
    """``path`` as text to show: a byte of a file name that is not UTF-8, which Python holds as a lone
    surrogate and Qt drops from what it draws (``caf\\xe9.txt`` showed as ``caf.txt``), as U+FFFD."""
    return os.fsencode(path).decode("utf-8", "replace")


def detect_newline(text: str) -> str:
    """The most common line ending in ``text`` (LF when there is none)."""
    crlf = text.count("\r\n")
    counts = {"\r\n": crlf, "\n": text.count("\n") - crlf, "\r": text.count("\r") - crlf}
    best = max(counts, key=counts.get)
    return best if counts[best] else "\n"


def decode(data: bytes) -> tuple[str, TextFormat]:
    """Decode ``data`` into text with ``\\n`` line endings, and the format to write it back."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                raw = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as error:
                raise NotTextError(f"the file starts like {encoding.upper()} but is not valid {encoding.upper()}") from error
            return _normalise(raw, encoding, bom=True)
    utf16 = _utf16_without_bom(data)
    if utf16 is not None:
        return _normalise(data.decode(utf16), utf16, bom=False)
    if b"\0" in data:
        raise NotTextError("the file looks binary (it contains NUL bytes)")
    for encoding in FALLBACK_ENCODINGS:
        try:
            raw = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        return _normalise(raw, encoding, bom=False)
    raise NotTextError(f"the file is not valid text in any encoding tried ({', '.join(FALLBACK_ENCODINGS)})")


def _utf16_without_bom(data: bytes) -> str | None:
    """"utf-16-le" / "utf-16-be" when ``data`` looks like mostly-ASCII UTF-16 without a BOM."""
    if len(data) < 4 or len(data) % 2:
        return None
    for encoding, zeros, chars in (("utf-16-le", data[1::2], data[0::2]), ("utf-16-be", data[0::2], data[1::2])):
        if zeros.count(0) >= 0.9 * len(zeros) and chars.count(0) == 0:
            try:
                data.decode(encoding)
            except UnicodeDecodeError:
                return None
            return encoding
    return None


def _normalise(raw: str, encoding: str, bom: bool) -> tuple[str, TextFormat]:
    newline = detect_newline(raw)
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    mixed = raw.count(newline) != text.count("\n")  # some line ended otherwise
    return text, TextFormat(encoding, bom, newline, mixed)


def encode(text: str, fmt: TextFormat) -> bytes:
    """``text`` (with ``\\n`` line endings) as bytes in ``fmt``; raises UnicodeEncodeError."""
    data = text.replace("\n", fmt.newline).encode(fmt.encoding)
    if fmt.bom:
        data = next(bom for bom, encoding in _BOMS if encoding == fmt.encoding) + data
    return data


def open_regular(path: str):
    """``path`` opened for binary reading if it is a regular file of at most ``MAX_FILE_BYTES``;
    NotTextError for a device, a pipe or a socket (opened without blocking, so a FIFO cannot
    hang the open, and checked on the opened file, so it cannot be swapped in between) or a
    larger file, OSError as raised."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path} is a folder")
    try:
        handle = regular_file.open_regular(path)
    except regular_file.NotRegularFile:
        raise NotTextError("it is not a regular file (a device, a pipe or a socket)") from None
    size = os.fstat(handle.fileno()).st_size
    if size > MAX_FILE_BYTES:
        handle.close()
        raise NotTextError(f"the file is {size / 2**20:.0f} MB; Sfumato opens files up to {MAX_FILE_BYTES >> 20} MB")
    return handle


def read_bounded(path: str) -> bytes:
    """The bytes of the regular file at ``path`` (``open_regular``), at most ``MAX_FILE_BYTES``."""
    with open_regular(path) as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise NotTextError(f"the file grew past {MAX_FILE_BYTES >> 20} MB while it was read")
    return data


class ReadText(NamedTuple):
    text: str
    format: TextFormat
    longest_line: int  # characters


def read_text(path: str) -> ReadText:
    """The text of the file at ``path``; NotTextError for binary, too large or special files, OSError as raised."""
    return text_of(read_bounded(path))


def text_of(data: bytes) -> ReadText:
    """The text a file's bytes ``data`` hold; NotTextError for binary data or a line too long to open."""
    text, fmt = decode(data)
    longest = max(map(len, text.split("\n")))
    if longest > MAX_LINE_CHARS:
        raise NotTextError(
            f"it has a line of {longest:,} characters; Sfumato opens lines up to {MAX_LINE_CHARS:,} characters"
        )
    return ReadText(text, fmt, longest)


def write_atomic(path: str, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: temp file in the same folder, fsync, rename.

    The new file gets the old one's owner, group and extended attributes (ACLs, SELinux labels,
    tags) and the permission bits ``mode``, else the old file's (a new file: the default ones).
    Where one of those cannot be kept (a user saving another user's group-writable file), the
    file has other hard links, its folder refuses a new file (a writable file in a folder the user
    may not write) or it cannot be renamed over (EBUSY: a file mounted on its own), the file's own
    bytes are overwritten instead, as other editors do:
    not atomic, but the file stays what it was (the recovery copy holds an edited text meanwhile).
    A symbolic link is followed (the file it points to is written, the link stays). A read-only
    file is refused with PermissionError even where the folder would allow replacing it. Temp
    files that a killed save of ours left in the folder are removed.
    """
    path = os.path.realpath(path)
    folder = os.path.dirname(path)
    try:
        old = os.stat(path)
    except FileNotFoundError:
        old = None
    if old is not None and (not stat.S_IMODE(old.st_mode) & 0o222 or not os.access(path, os.W_OK)):
        raise PermissionError(errno.EACCES, "the file is read-only", path)
    if mode is None:
        mode = stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_umask()
    if old is not None and old.st_nlink > 1:
        _write_in_place(path, data)  # a rename would leave the other names with the old text
    else:
        _replace(path, data, mode, old)
    _remove_stale_temps(folder)


def _replace(path: str, data: bytes, mode: int, old: os.stat_result | None) -> None:
    folder = os.path.dirname(path)
    try:
        handle, temp_path = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=TEMP_SUFFIX, dir=folder)
    except PermissionError:
        if old is None:
            raise
        _write_in_place(path, data)  # a file the user may write in a folder they may not
        return
    try:
        with os.fdopen(handle, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
        replaced = (old is None or _carry_over(old, path, temp_path)) and _rename_over(temp_path, path, mode)
        if not replaced:
            os.unlink(temp_path)
            _write_in_place(path, data)
            return
    except BaseException:
        if os.path.exists(temp_path):
            os.unlink(temp_path)
        raise
    _sync_folder(folder)


def _rename_over(temp_path: str, path: str, mode: int) -> bool:
    """Rename the temp file over ``path``; False where the file cannot be renamed over (EBUSY: a file
    mounted on its own, a container's config), so it is written in place."""
    os.chmod(temp_path, mode)
    try:
        os.replace(temp_path, path)
    except OSError as error:
        if error.errno != errno.EBUSY:
            raise
        return False
    return True


def _sync_folder(folder: str) -> None:
    """Make the rename durable where the file system can. The file is replaced already: a folder
    that cannot be synced (some network and FUSE file systems refuse) is no failure of the save,
    which would leave the document marked unsaved and its next save asking about a change on disk."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(directory)
    except OSError:
        pass
    finally:
        os.close(directory)


def _carry_over(old: os.stat_result, path: str, temp_path: str) -> bool:
    """Give the temp file the owner, group and extended attributes of ``path``; False when one
    of them cannot be set."""
    try:
        new = os.stat(temp_path)
        if hasattr(os, "chown") and (new.st_uid, new.st_gid) != (old.st_uid, old.st_gid):
            os.chown(temp_path, old.st_uid, old.st_gid)
        for name in _xattr_names(path):
            os.setxattr(temp_path, name, os.getxattr(path, name, follow_symlinks=False))
    except OSError:
        return False
    return True


def _xattr_names(path: str) -> list[str]:
    """The extended attributes of ``path``; none where the platform or file system has none."""
    if not hasattr(os, "listxattr"):
        return []
    try:
        return os.listxattr(path)
    except OSError as error:
        if error.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return []
        raise


def _write_in_place(path: str, data: bytes) -> None:
    """Overwrite ``path``'s bytes: its inode keeps owner, group, attributes and hard links. The
    space is reserved first, so a full disk fails the save before a byte of the file is overwritten
    (the file would be left half new, half old)."""
    with open(path, "r+b") as handle:
        _reserve(handle.fileno(), len(data))
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())


def _reserve(fd: int, size: int) -> None:
    """Allocate ``size`` bytes for the file ``fd``; OSError when the disk or quota is full. A file
    system that cannot reserve space is written without."""
    if size == 0 or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise


def _remove_stale_temps(folder: str) -> None:
    """Remove the temp files of ours (by name and owner) in ``folder`` that no save is writing:
    their process is gone, or they are older than any save takes."""
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(TEMP_PREFIX) and entry.name.endswith(TEMP_SUFFIX)):
            continue
        pid, dash, _ = entry.name[len(TEMP_PREFIX) : -len(TEMP_SUFFIX)].partition("-")
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                continue
            if now - info.st_mtime > STALE_TEMP_SECONDS or (dash and pid.isdigit() and not _running(int(pid))):
                os.unlink(entry.path)
        except OSError:
            continue  # gone already, or not ours to remove


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def write_text(path: str, text: str, fmt: TextFormat) -> None:
    """Save ``text`` to ``path`` in ``fmt``, atomically."""
    write_atomic(path, encode(text, fmt))
