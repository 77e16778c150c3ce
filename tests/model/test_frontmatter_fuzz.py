"""Fuzzed frontmatters: the reader and package validation raise only their documented errors, and quickly."""

from __future__ import annotations

import contextlib
import random
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strawpot.model.frontmatter import FrontmatterError, split_frontmatter
from strawpot.model.kinds import Kind
from strawpot.model.package import PackageInvalid, parse_package
from tests.model.hostile_yaml import CORPUS

# YAML's structural characters weighted up, so the fuzzer reaches flow maps, anchors, tags and merges.
_TOKENS = [
    "{", "}", "[", "]", ",", ":", ": ", "- ", "? ", "&a", "*a", "!!", "!!str ", "!!python/name:os.system", "<<: ",
    "|", ">", "#", "'", '"', "\\", "%YAML 1.1\n", "---", "...", "\n", "\n  ", "\t", " ", "name", "x", "1.0.0",
    "metadata:\n  strawpot:\n    ", "dependencies: ", "tools: ", "env: ", "bin: ", "\x00", "\ufeff", "é", "9" * 50,
    "0x", "1e999", ".nan", "2026-01-01", "~", "null", "true",
]
_VALID = "name: fuzz\ndescription: a fuzzed package\nversion: 1.0.0\nmetadata:\n  strawpot:\n    dependencies: [a, b>=1]\n"


def _frontmatter(data: st.DataObject) -> str:
    pieces = data.draw(st.lists(st.sampled_from(_TOKENS) | st.text(max_size=8), max_size=60))
    if data.draw(st.booleans()):  # a valid document with noise spliced in somewhere
        cut = data.draw(st.integers(0, len(_VALID)))
        return _VALID[:cut] + "".join(pieces) + _VALID[cut:]
    return "".join(pieces)


def _check(text: str) -> None:
    started = time.process_time()  # CPU time: catastrophic backtracking shows, a stalled worker does not
    try:
        split_frontmatter(text)
    except FrontmatterError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 300, str(exc)
    with contextlib.suppress(PackageInvalid):
        parse_package({"SKILL.md": text.encode("utf-8", "surrogatepass")}, kind=Kind.SKILL)
    assert time.process_time() - started < 5


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_frontmatter_raises_only_the_documented_errors(data: st.DataObject) -> None:
    _check(f"---\n{_frontmatter(data)}\n---\nbody\n")


def test_seeded_mutations_of_the_hostile_corpus() -> None:
    """Byte-level mutations (delete, duplicate, swap) of each hostile document, 60 each, seeded."""
    rng = random.Random(12)
    for hostile in CORPUS.values():
        base = f"---\nname: x\ndescription: y\n{hostile[:400]}\n---\n"
        for _ in range(40):
            chars = list(base)
            for _ in range(rng.randint(1, 6)):
                i = rng.randrange(len(chars))
                op = rng.randrange(3)
                if op == 0:
                    del chars[i]
                elif op == 1:
                    chars.insert(i, rng.choice(_TOKENS))
                else:
                    j = rng.randrange(len(chars))
                    chars[i], chars[j] = chars[j], chars[i]
            _check("".join(chars))
