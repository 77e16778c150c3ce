"""The README's tour blocks follow each other: every `cd` goes somewhere that exists after the blocks above it
(the first starts in the checkout, after scripts/demo.sh made .demo/project)."""

from __future__ import annotations

import posixpath
import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def tour_blocks() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
    tour = text.split("## A tour", 1)[1].split("\n## ", 1)[0]
    return [block.splitlines() for block in re.findall(r"```bash\n(.*?)```", tour, flags=re.S)]


def test_every_cd_in_the_tour_lands_in_a_folder_that_exists() -> None:
    blocks = tour_blocks()
    assert len(blocks) >= 3
    made = {"/repo", "/repo/.demo", "/repo/.demo/project", "/repo/fixtures"}
    cwd = "/repo"
    for block in blocks:
        for line in block:
            command = line.split("  #", 1)[0].split(" # ", 1)[0].strip()
            if not command or command.startswith("#"):
                continue
            for part in command.split("&&"):
                words = shlex.split(part)
                if words[:2] == ["mkdir", words[1] if len(words) > 1 else ""] and len(words) == 2:
                    made.add(posixpath.normpath(posixpath.join(cwd, words[1])))
                elif words and words[0] == "cd":
                    target = posixpath.normpath(posixpath.join(cwd, words[1]))
                    assert target in made, f"`{line.strip()}` runs in {cwd}, where {words[1]} does not exist"
                    cwd = target
