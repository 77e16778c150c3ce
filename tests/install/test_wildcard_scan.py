"""A role's `*` is found however its YAML writes it (plainly or as an escape), though only a ROLE.md whose bytes
could spell one is parsed (`strawpot.model.yaml_scan.may_spell`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strawpot.install.queries import wildcard_edges
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import Lockfile
from strawpot.model.yaml_scan import may_spell
from tests._cli import strawpot_here

SKILL = "---\nname: {name}\ndescription: A local skill.\nmetadata:\n  version: 1.0.0\n---\n\nRule.\n"
ROLE = ("---\nname: {name}\ndescription: A local role.\nmetadata:\n  version: 0.1.0\n  strawpot:\n"
        "    dependencies:\n      skills: [{skills}]\n{roles}---\n\nDo it.\n")
ROLES = {  # name: (its skills as written in ROLE.md, its roles line)
    "plain": ('"*"', ""),
    "escaped": ('"\\x2a"', ""),  # the YAML escape of '*' in a double-quoted scalar
    "unicode-escaped": ('"\\u002a", "b"', ""),
    "roles-escaped": ('"a"', '      roles: ["\\x2A"]\n'),
    "named": ('"a"', ""),
    "named-with-backslash": ('"a"', '      # a \\ in a comment\n'),
}


@pytest.fixture
def project(tmp_path: Path, unused_port: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three skills and the roles above, installed by path (nothing fetched)."""
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", f"http://127.0.0.1:{unused_port}")
    manifest = ["[skills]"]
    for name in ("a", "b", "c"):
        (tmp_path / "skills" / name).mkdir(parents=True)
        (tmp_path / "skills" / name / "SKILL.md").write_text(SKILL.format(name=name))
        manifest.append(f'{name} = {{ path = "../skills/{name}" }}')
    manifest.append("[roles]")
    for name, (skills, roles) in ROLES.items():
        (tmp_path / "roles" / name).mkdir(parents=True)
        (tmp_path / "roles" / name / "ROLE.md").write_text(ROLE.format(name=name, skills=skills, roles=roles))
        manifest.append(f'{name} = {{ path = "../roles/{name}" }}')
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "strawpot.toml").write_text("\n".join(manifest) + "\n")
    done = strawpot_here("install", cwd=proj)
    assert done.returncode == 0, done.stderr
    return proj


def test_a_roles_wildcard_is_found_plainly_or_escaped(project: Path) -> None:
    lock = Lockfile.load(project / "strawpot.lock")
    edges = wildcard_edges(lock, project / ".strawpot")
    skills = [(Kind.SKILL, n) for n in ("a", "b", "c")]
    roles = [(Kind.ROLE, n) for n in sorted(ROLES)]
    assert edges == {
        (Kind.ROLE, "plain"): skills,
        (Kind.ROLE, "escaped"): skills,
        (Kind.ROLE, "unicode-escaped"): [k for k in skills if k != (Kind.SKILL, "b")],  # b it names
        (Kind.ROLE, "roles-escaped"): [k for k in roles if k != (Kind.ROLE, "roles-escaped")],
    }
    assert "\\x2a" in (project / ".strawpot" / "roles" / "escaped" / "ROLE.md").read_text()  # installed as written


def test_tree_shows_what_an_escaped_wildcard_brings_in(project: Path) -> None:
    done = strawpot_here("tree", cwd=project)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("role escaped 0.1.0")
    assert lines[start + 1:start + 4] == ["├── skill a 1.0.0 (via *) (*)", "├── skill b 1.0.0 (via *) (*)",
                                          "└── skill c 1.0.0 (via *) (*)"]
    why = strawpot_here("why", "skill", "c", cwd=project)
    assert "role escaped 0.1.0 → skill c 1.0.0 (via *)" in why.stdout.splitlines(), why.stdout


@settings(deadline=None)
@given(st.binary(max_size=200))
def test_the_byte_check_is_false_only_without_a_star_or_a_backslash(data: bytes) -> None:
    assert may_spell(data, b"*") is (b"*" in data or b"\\" in data)


@pytest.mark.parametrize("text", ['skills: ["*"]', 'skills: ["\\x2a"]', 'skills: ["\\u002A"]', 'skills: ["\\U0000002a"]',
                                  "skills: ['*']", "skills:\n  - \"*\"", 'skills: [" * "]'])
def test_every_yaml_spelling_of_a_star_passes_the_byte_check(text: str, tmp_path: Path) -> None:
    import yaml

    assert "*" in [s.strip() for s in yaml.safe_load(text)["skills"]]
    assert may_spell(text.encode(), b"*")


def test_a_role_whose_main_file_is_missing_or_a_folder_names_no_wildcard(project: Path) -> None:
    main = project / ".strawpot" / "roles" / "plain" / "ROLE.md"
    main.unlink()
    lock = Lockfile.load(project / "strawpot.lock")
    assert (Kind.ROLE, "plain") not in wildcard_edges(lock, project / ".strawpot")
    main.mkdir()  # a folder where the file must be
    assert (Kind.ROLE, "plain") not in wildcard_edges(lock, project / ".strawpot")
    assert (Kind.ROLE, "escaped") in wildcard_edges(lock, project / ".strawpot")


def test_only_a_role_whose_bytes_could_spell_a_star_is_parsed(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from strawpot.model import package_folder

    parsed: list[str] = []
    real = package_folder.load_package

    def spy(folder: Path, kind: Kind) -> object:
        parsed.append(folder.name)
        return real(folder, kind)

    monkeypatch.setattr(package_folder, "load_package", spy)
    edges = wildcard_edges(Lockfile.load(project / "strawpot.lock"), project / ".strawpot")
    assert sorted(parsed) == sorted(set(ROLES) - {"named"})  # a backslash in a comment is parsed, to be sure
    assert (Kind.ROLE, "named") not in edges and (Kind.ROLE, "named-with-backslash") not in edges
