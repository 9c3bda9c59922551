"""File reading and writing: encodings, BOMs and line endings round-trip; bad files are refused."""

from __future__ import annotations

import codecs
import errno
import os
import stat
import subprocess
import sys
import time

import pytest

from sfumato.app import fileio

ROUND_TRIPS = {
    "utf8": "héllo\nwörld\n".encode(),
    "utf8-bom": codecs.BOM_UTF8 + "héllo\r\nwörld\r\n".encode(),
    "utf16-le-bom": codecs.BOM_UTF16_LE + "tab\there\nα\n".encode("utf-16-le"),
    "utf16-be-bom": codecs.BOM_UTF16_BE + "x = 1\r\n".encode("utf-16-be"),
    "utf16-le-no-bom": "plain ascii text\nline two\n".encode("utf-16-le"),
    "cp1252": "caf\xe9 \u20ac price\n".encode("cp1252"),
    "cr-only": b"old\rmac\rfile",
    "empty": b"",
    "no-final-newline": b"last line",
    "nbsp-and-line-separator": "a\u00a0b\u2028c\n".encode(),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_an_unedited_file_saves_byte_identically(tmp_path, name):
    data = ROUND_TRIPS[name]
    path = tmp_path / name
    path.write_bytes(data)
    text, fmt, _ = fileio.read_text(str(path))
    assert "\r" not in text
    fileio.write_text(str(path), text, fmt)
    assert path.read_bytes() == data


def test_the_longest_line_is_measured_once_on_reading(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes("ab\r\nabcdé\r\n\r\nabc".encode())
    assert fileio.read_text(str(path)).longest_line == 5  # characters, the line break not counted


def test_mixed_line_endings_take_the_most_common_one():
    text, fmt = fileio.decode(b"a\r\nb\nc\r\n")
    assert text == "a\nb\nc\n" and fmt.newline == "\r\n"


def test_formats_are_detected():
    assert fileio.decode(codecs.BOM_UTF8 + b"x")[1] == fileio.TextFormat("utf-8", True, "\n")
    assert fileio.decode("x\r\n".encode("utf-16-le"))[1] == fileio.TextFormat("utf-16-le", False, "\r\n")
    assert fileio.decode(b"caf\xe9")[1].encoding == "cp1252"


@pytest.mark.parametrize(
    "data",
    [b"\x7fELF\x02\x01\x01\x00\x00\x00\x00", bytes(range(256)), b"text\x00with a NUL", codecs.BOM_UTF8 + b"\xff\xfe\xfd"],
)
def test_binary_or_undecodable_files_are_refused(tmp_path, data):
    path = tmp_path / "blob"
    path.write_bytes(data)
    with pytest.raises(fileio.NotTextError):
        fileio.read_text(str(path))


def test_a_folder_is_not_a_file(tmp_path):
    with pytest.raises(IsADirectoryError):
        fileio.read_text(str(tmp_path))


def test_atomic_save_keeps_permissions_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "script.sh"
    path.write_text("old\n")
    os.chmod(path, 0o750)
    fileio.write_text(str(path), "new\n", fileio.TextFormat())
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o750
    assert os.listdir(tmp_path) == ["script.sh"]


def test_a_failed_save_keeps_the_old_file(tmp_path):
    path = tmp_path / "keep.txt"
    path.write_text("precious\n")
    with pytest.raises(UnicodeEncodeError):
        fileio.write_text(str(path), "snowman ☃", fileio.TextFormat("cp1252"))
    assert path.read_text() == "precious\n"
    assert os.listdir(tmp_path) == ["keep.txt"]


def test_saving_into_a_missing_folder_raises(tmp_path):
    with pytest.raises(OSError):
        fileio.write_text(str(tmp_path / "gone" / "file.txt"), "x", fileio.TextFormat())


def test_saving_keeps_hard_links(tmp_path):
    path, link = tmp_path / "a.txt", tmp_path / "b.txt"
    path.write_text("old\n")
    os.link(path, link)
    inode = os.stat(path).st_ino
    fileio.write_text(str(path), "new\n", fileio.TextFormat())
    assert link.read_text() == "new\n" and os.stat(path).st_ino == inode and os.stat(path).st_nlink == 2
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]


def _set_xattr_or_skip(path) -> None:
    try:
        os.setxattr(path, "user.sfumato-test", b"kept")
    except OSError:
        pytest.skip("this file system holds no user extended attributes")


def test_saving_keeps_extended_attributes(tmp_path):
    path = tmp_path / "tagged.txt"
    path.write_text("old\n")
    _set_xattr_or_skip(path)
    fileio.write_text(str(path), "new\n", fileio.TextFormat())
    assert path.read_text() == "new\n" and os.getxattr(path, "user.sfumato-test") == b"kept"


def test_attributes_that_cannot_be_copied_make_the_save_write_in_place(tmp_path, monkeypatch):
    path = tmp_path / "tagged.txt"
    path.write_text("old and longer\n")
    _set_xattr_or_skip(path)
    inode = os.stat(path).st_ino

    def refused(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "setxattr", refused)  # as a trusted.* or security.* name would be for a user
    fileio.write_text(str(path), "new\n", fileio.TextFormat())
    assert path.read_text() == "new\n" and os.stat(path).st_ino == inode
    assert os.getxattr(path, "user.sfumato-test") == b"kept" and os.listdir(tmp_path) == ["tagged.txt"]


def test_a_writable_file_in_a_folder_that_takes_no_new_file_is_written_in_place(tmp_path, monkeypatch):
    """A file the user may write in a folder they may not (a config under /etc given to them): no
    temp file can be made beside it. (Root may always make one, so the refusal is simulated.)"""
    path = tmp_path / "hosts.txt"
    path.write_text("old and longer\n")
    inode = os.stat(path).st_ino

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(fileio.tempfile, "mkstemp", refused)
    fileio.write_text(str(path), "new\n", fileio.TextFormat())
    assert path.read_text() == "new\n" and os.stat(path).st_ino == inode and os.listdir(tmp_path) == ["hosts.txt"]
    with pytest.raises(PermissionError):  # a new file there cannot be made at all
        fileio.write_text(str(tmp_path / "new.txt"), "x\n", fileio.TextFormat())


def test_a_file_mounted_on_its_own_is_written_in_place(tmp_path, monkeypatch):
    """A file bind-mounted on its own (a container's config) cannot be renamed over: EBUSY."""
    path = tmp_path / "mounted.conf"
    path.write_text("old and longer\n")
    inode = os.stat(path).st_ino

    def busy(*args, **kwargs):
        raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(os, "replace", busy)
    fileio.write_text(str(path), "new\n", fileio.TextFormat())
    assert path.read_text() == "new\n" and os.stat(path).st_ino == inode and os.listdir(tmp_path) == ["mounted.conf"]


root_only = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file to another user")


@root_only
def test_saving_as_root_keeps_the_files_owner_and_group(tmp_path):
    path = tmp_path / "theirs.txt"
    path.write_text("old\n")
    os.chown(path, 65534, 65534)
    fileio.write_text(str(path), "new\n", fileio.TextFormat())
    info = os.stat(path)
    assert path.read_text() == "new\n" and (info.st_uid, info.st_gid) == (65534, 65534)


@root_only
def test_an_owner_that_cannot_be_kept_makes_the_save_write_in_place(tmp_path, monkeypatch):
    """A user saving another user's group-writable file cannot give the new file its owner."""
    path = tmp_path / "theirs.txt"
    path.write_text("old\n")
    os.chown(path, 65534, 65534)
    inode = os.stat(path).st_ino

    def refused(*args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "chown", refused)
    fileio.write_text(str(path), "new\n", fileio.TextFormat())
    info = os.stat(path)
    assert path.read_text() == "new\n" and info.st_ino == inode and (info.st_uid, info.st_gid) == (65534, 65534)


def test_temp_files_a_killed_save_left_are_removed_and_no_others(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead, alive = int(ended.stdout), os.getpid()
    names = {
        "old": ".sfumato-k3j9x2ab.tmp",  # an older version's name, left two hours ago
        "dead": f".sfumato-{dead}-q8w7e6r5.tmp",  # its process is gone
        "saving": f".sfumato-{alive}-a1s2d3f4.tmp",  # a save going on right now
        "fresh": ".sfumato-z9x8c7v6.tmp",  # an older version's, just written: perhaps a save going on
        "other": ".sfumato-notes.txt",
    }
    for name in names.values():
        (tmp_path / name).write_text("x")
    two_hours_ago = time.time() - 7200
    os.utime(tmp_path / names["old"], (two_hours_ago, two_hours_ago))
    fileio.write_text(str(tmp_path / "doc.txt"), "new\n", fileio.TextFormat())
    assert sorted(os.listdir(tmp_path)) == sorted(["doc.txt", names["saving"], names["fresh"], names["other"]])
