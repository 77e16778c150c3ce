"""A tree installed by strawpot reads back identically through the real strawhub 0.1.54 runtime resolver."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from strawpot.model.lockfile import Lockfile

pytestmark = pytest.mark.compat

STRAWHUB = Path(sys.executable).parent / "strawhub"


def test_strawhub_resolve_reads_our_tree(cli, project, registry, isolated_env):
    # strawhub's runtime resolver understands only `slug` and `slug==X.Y.Z` dependencies
    a, b, sub, top = (registry.unique(p) for p in ("cp-a", "cp-b", "cp-sub", "cp-top"))
    registry.publish("skill", a, "1.0.0")
    registry.publish("skill", a, "1.1.0")
    registry.publish("skill", b, "2.0.0", skills=[f"{a}==1.0.0"])
    registry.publish("role", sub, "1.0.0", skills=[b])
    registry.publish("role", top, "3.1.0", skills=[a], roles=[sub, "*"])
    assert cli("install", "role", top, "--project", project.dir).code == 0

    exe = str(STRAWHUB) if STRAWHUB.exists() else "strawhub"
    home = isolated_env / "strawhub-home"
    home.mkdir()
    done = subprocess.run(
        [exe, "resolve", "role", top], cwd=project.dir, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "STRAWPOT_HOME": str(home / "global")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    resolved = json.loads(done.stdout)

    lock = Lockfile.load(project.lock_path)
    tree = project.dir.resolve() / ".strawpot"
    ours = {(p.kind.value, p.name): (p.version, str(tree / p.kind.plural / p.name)) for p in lock.packages}
    theirs = {(d["kind"], d["slug"]): (d["version"], d["path"]) for d in resolved["dependencies"]}
    theirs[("role", resolved["slug"])] = (resolved["version"], resolved["path"])
    assert theirs == ours
    assert ours[("skill", a)][0] == "1.0.0"  # the pinned version, although 1.1.0 is newer
    assert all(d["source"] == "local" for d in resolved["dependencies"])
