"""safe_relative_path: the one check for paths from a package, an upload or an archive."""

from __future__ import annotations

import pytest

from strawpot.model.paths import MAX_PATH_LENGTH, UnsafePath, safe_relative_path


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("SKILL.md", "SKILL.md"),
        ("bin/run", "bin/run"),
        ("a/b/c.txt", "a/b/c.txt"),
        ("dir with space/file name.md", "dir with space/file name.md"),
        ("ünïcode/ファイル.md", "ünïcode/ファイル.md"),
        ("..hidden-but-not-dotdot", "..hidden-but-not-dotdot"),
        ("a..b/c", "a..b/c"),
        ("/".join(["x" * 204] * 5), "/".join(["x" * 204] * 5)),  # MAX_PATH_LENGTH characters in all
        ("x" * 255, "x" * 255),
        ("é" * 127, "é" * 127),  # 254 bytes
    ],
)
def test_safe_paths_pass_unchanged(path: str, expected: str) -> None:
    assert safe_relative_path(path) == expected


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "empty path"),
        ("/etc/passwd", "absolute path"),
        ("/", "absolute path"),
        ("C:/Windows/system32", "absolute path"),
        ("c:relative-drive", "absolute path"),
        ("..", "'..' component"),
        ("../outside", "'..' component"),
        ("a/../../b", "'..' component"),
        ("a/..", "'..' component"),
        ("./SKILL.md", "'.' or '..' component"),
        ("a/./b", "'.' or '..' component"),
        ("a//b", "empty, '.' or '..' component"),
        ("a/", "empty, '.' or '..' component"),
        ("a\\b", "backslash"),
        ("..\\..\\evil", "backslash"),
        ("a\x00b", "control character"),
        ("line\nbreak", "control character"),
        ("del\x7f", "control character"),
        ("x" * (MAX_PATH_LENGTH + 1), "longer than"),
        ("x" * 256, "longer than 255 bytes"),
        ("a/" + "é" * 128, "longer than 255 bytes"),  # 256 bytes in UTF-8: more than a file system holds
    ],
)
def test_unsafe_paths_are_refused_saying_why(path: str, reason: str) -> None:
    with pytest.raises(UnsafePath, match=None) as info:
        safe_relative_path(path)
    assert reason in str(info.value)
