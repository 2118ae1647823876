"""Path confinement, atomic writes, file names and settings of tinyagent.functions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tinyagent.errors import ConfigurationError, PathEscapeError
from tinyagent.functions import FunctionsSettings, ItemNotFound, atomic_write, confine
from tinyagent.functions._paths import safe_filename


def test_confine_accepts_relative_and_absolute_inside(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    target = tmp_path / "files" / "a.txt"
    target.write_text("x")
    assert confine("files/a.txt", [tmp_path]) == target.resolve()
    assert confine(str(target), [tmp_path]) == target.resolve()


def test_confine_relative_path_prefers_the_root_where_it_exists(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    (second / "only-here.txt").write_text("x")
    assert confine("only-here.txt", [first, second]) == (second / "only-here.txt").resolve()


@pytest.mark.parametrize("path", ["../outside.txt", "files/../../outside.txt", "/etc/passwd", "~/.ssh/id_rsa"])
def test_confine_refuses_traversal(tmp_path: Path, path: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(PathEscapeError, match="outside the allowed folders"):
        confine(path, [root])


def test_confine_refuses_symlink_escape(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (root / "link.txt").symlink_to(secret)
    (root / "dirlink").symlink_to(tmp_path)
    with pytest.raises(PathEscapeError):
        confine("link.txt", [root])
    with pytest.raises(PathEscapeError):
        confine("dirlink/secret.txt", [root])


def test_confine_allows_symlink_that_stays_inside(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "real.txt")
    assert confine("alias.txt", [tmp_path]) == (tmp_path / "real.txt").resolve()


@pytest.mark.parametrize("path", ["", "   ", "a\x00b"])
def test_confine_refuses_unusable_paths(tmp_path: Path, path: str) -> None:
    with pytest.raises(PathEscapeError):
        confine(path, [tmp_path])


def test_confine_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ItemNotFound, match="does not exist"):
        confine("missing.txt", [tmp_path], must_exist=True)


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.txt"
    atomic_write(path, "one")
    atomic_write(path, b"two")
    assert path.read_text() == "two"
    assert sorted(os.listdir(path.parent)) == ["f.txt"]


def test_atomic_write_failure_keeps_old_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.txt"
    atomic_write(path, "old")

    def boom(src: str, dst: str, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, "new")
    assert path.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["f.txt"]


def test_safe_filename() -> None:
    assert safe_filename("Q4: plan/budget?") == "Q4 plan budget"
    assert safe_filename("  Zoë's notes  ") == "Zoë's notes"
    with pytest.raises(ValueError, match="no usable characters"):
        safe_filename("../..")


def test_settings_forbid_unknown_fields_and_check_values(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="smtp_hots"):
        FunctionsSettings(data_dir=tmp_path, smtp_hots="x")
    with pytest.raises(ConfigurationError, match="unknown timezone"):
        FunctionsSettings(data_dir=tmp_path, timezone="Mars/Olympus")
    with pytest.raises(ConfigurationError, match="not an email address"):
        FunctionsSettings(data_dir=tmp_path, sender="nobody")
    with pytest.raises(ConfigurationError, match="must start with https"):
        FunctionsSettings(data_dir=tmp_path, meeting_url_template="ftp://x/{slug}")


def test_settings_defaults(tmp_path: Path) -> None:
    settings = FunctionsSettings(data_dir=tmp_path, roots=(tmp_path / "extra",))
    assert settings.allowed_roots == [tmp_path, tmp_path / "extra"]
    assert settings.file_roots == [tmp_path / "files", tmp_path / "extra"]
    assert settings.calendar_path == tmp_path / "calendar" / "calendar.ics"
    assert "tinyagent" in str(FunctionsSettings().data_dir)
    assert settings.tz is not None
