"""The hostile frontmatters of issue 12 (shared by the model tests and benchmarks/hostile_corpus.py)."""

from __future__ import annotations

LOL = '"lol"'


def billion_laughs(field: str = "dependencies") -> str:
    """~580 bytes: nine levels of nine aliases, 9**9 strings once expanded, under metadata.strawpot.<field>."""
    lines = [f"a0: &a0 [{', '.join([LOL] * 9)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    value = "*a8" if field == "dependencies" else "{lol: {description: *a8}}"
    return "\n".join([*lines, "metadata:", "  strawpot:", f"    {field}: {value}"])


def merge_chain(levels: int = 40) -> str:
    """A chain of merge keys, each level merging the previous one twice."""
    lines = ["m0: &m0 {k: v}"]
    lines += [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: v}}" for i in range(1, levels)]
    return "\n".join(lines)


def merge_inline() -> str:
    """A merge key with no alias at all."""
    return "tools:\n  <<: {git: {description: Git}}"


def nested_flow(size: int = 250_000) -> str:
    """`{a: {a: {a: ...}}}` of about `size` bytes."""
    depth = size // 5
    return "deep: " + "{a: " * depth + "1" + "}" * depth


def nested_flow_small(depth: int = 2_000) -> str:
    """Deeper than any limit but small enough to reach the parser (under the size limit)."""
    return "deep: " + "[" * depth + "]" * depth


def nested_block(depth: int = 60) -> str:
    return "\n".join(" " * i + "a:" for i in range(depth)) + "\n" + " " * depth + "b: 1"


def main_file(name: str, hostile: str) -> str:
    return f"---\nname: {name}\ndescription: hostile\n{hostile}\n---\n\nBody.\n"


CORPUS = {
    "billion-laughs-dependencies": billion_laughs("dependencies"),
    "billion-laughs-tools": billion_laughs("tools"),
    "merge-chain": merge_chain(),
    "merge-inline": merge_inline(),
    "nested-flow-250k": nested_flow(),
    "nested-flow-small": nested_flow_small(),
    "nested-block": nested_block(),
}
