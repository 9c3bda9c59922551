"""File reading and writing: encodings, BOMs and line endings round-trip; bad files are refused."""

from __future__ import annotations

import codecs
import os
import stat

import pytest

from app import fileio

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
    text, fmt = fileio.read_text(str(path))
    assert "\r" not in text
    fileio.write_text(str(path), text, fmt)
    assert path.read_bytes() == data


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
