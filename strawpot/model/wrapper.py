"""The WrapperRuntime contract: the `build` arguments a wrapper is given and the JSON it must print.

`<wrapper> build --agent-id ID --working-dir DIR --agent-workspace-dir DIR --role-prompt TEXT
--memory-prompt TEXT --task TEXT --config JSON [--skills-dir DIR]... [--roles-dir DIR]... [--files-dir DIR]...
[--session-id ID | --resume ID]` prints one JSON object, `{"cmd": [...], "cwd": "...", "env": {...}}`: `cmd` a
list of strings with the program first, `cwd` a directory (the working directory when left out), `env` an
object of string values merged over the agent's environment (optional). `--files-dir` names a folder of files
the user attached to the project (`.strawpot/files`), given only when it exists. Only agents that declare
`metadata.strawpot.session: {resume: true}` are given `--session-id` (a new conversation with that id) or
`--resume` (continue that conversation); the others never see either flag. `validate --run-wrapper` and `strawpot start` both go through here,
so validate accepts exactly what start runs.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SHOWN = 2000
MAX_ENV_VALUE = 32 * 1024  # characters in one `env` value; exec refuses a NAME=value past 128 KiB on Linux
MAX_ARG_BYTES = 32 * 4096 - 1  # Linux refuses one argument longer than this (MAX_ARG_STRLEN less the NUL): E2BIG


class BuildOutputError(ValueError):
    """What `build` printed is not the contract's JSON object; the message says what is wrong and shows it."""


@dataclass(frozen=True)
class BuildRequest:
    """The protocol arguments of `<wrapper> build`."""

    agent_id: str
    working_dir: Path
    workspace: Path
    role_prompt: str
    memory_prompt: str
    task: str
    config: Mapping[str, Any] = field(default_factory=dict)
    skills_dirs: Sequence[Path] = ()
    roles_dirs: Sequence[Path] = ()
    files_dirs: Sequence[Path] = ()  # the project's `.strawpot/files`, when it exists
    session_id: str = ""  # a resumable agent's new conversation id
    resume: str = ""  # the conversation id a resumed agent continues
    role: str = ""  # the role being played, to name in errors (not an argument)

    def argv(self) -> list[str]:
        args = [
            "build",
            "--agent-id", self.agent_id,
            "--working-dir", str(self.working_dir),
            "--agent-workspace-dir", str(self.workspace),
            "--role-prompt", self.role_prompt,
            "--memory-prompt", self.memory_prompt,
            "--task", self.task,
            "--config", json.dumps(dict(self.config), sort_keys=True),
        ]
        for d in self.skills_dirs:
            args += ["--skills-dir", str(d)]
        for d in self.roles_dirs:
            args += ["--roles-dir", str(d)]
        for d in self.files_dirs:
            args += ["--files-dir", str(d)]
        if self.session_id:
            args += ["--session-id", self.session_id]
        if self.resume:
            args += ["--resume", self.resume]
        return args


    def oversize(self, env: Mapping[str, str]) -> str:
        """Why the system would refuse to run `build` with these arguments (E2BIG), or "" when it will not."""
        parts = {"--role-prompt": f"the prompt of role {self.role or '(unnamed)'} (its ROLE.md and what is staged "
                                  "with it)", "--memory-prompt": "the memory prompt", "--task": "the task",
                 "--config": "the agent's config"}
        argv = self.argv()
        if sys.platform.startswith("linux"):
            for flag, value in zip(argv, argv[1:], strict=False):
                size = len(value.encode("utf-8", "surrogateescape"))
                if flag in parts and size > MAX_ARG_BYTES:
                    return (f"{parts[flag]} is {size // 1024} KiB; one command-line argument may hold at most "
                            f"{(MAX_ARG_BYTES + 1) // 1024} KiB, so the wrapper cannot be run with it")
        total = sum(len(a.encode("utf-8", "surrogateescape")) + 1 + 8 for a in argv) + \
            sum(len(k) + len(v.encode("utf-8", "surrogateescape")) + 2 + 8 for k, v in env.items())
        try:
            limit = os.sysconf("SC_ARG_MAX")
        except (ValueError, OSError):
            return ""
        if total > limit - 4096:
            return (f"the wrapper's arguments and environment come to {total // 1024} KiB, over the system's "
                    f"{limit // 1024} KiB (the prompt of role {self.role or '(unnamed)'} is "
                    f"{len(self.role_prompt.encode()) // 1024} KiB, the task {len(self.task.encode()) // 1024} KiB)")
        return ""


@dataclass(frozen=True)
class LaunchSpec:
    """The command `build` asked for, the directory to run it in and the variables to set for it."""

    cmd: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)


def parse_build_output(stdout: str, working_dir: Path) -> LaunchSpec:
    """Check `build`'s output against the contract (the named `cwd` must exist) or raise BuildOutputError."""
    text = stdout.strip()
    if not text:
        raise BuildOutputError('printed nothing; it must print {"cmd": [...], "cwd": "...", "env": {...}}')
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BuildOutputError(f"output is not JSON ({exc}):{indented(text)}") from None
    if not isinstance(data, dict):
        raise BuildOutputError(f"must print a JSON object, not a {json_type(data)}:{indented(text)}")
    problems = []
    cmd, cwd = data.get("cmd"), data.get("cwd", str(working_dir))
    if "cmd" not in data:
        problems.append("missing key: cmd")
    elif not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) for a in cmd) or not cmd[0]:
        problems.append(f"'cmd' must be a list of strings, a program first, got {_shown(cmd)}")
    if not isinstance(cwd, str) or not cwd:
        problems.append(f"'cwd' must be a path string, got {json_type(cwd)} {_shown(cwd)}")
    elif not Path(cwd).is_dir():
        problems.append(f"'cwd' {cwd!r} is not a directory")
    env = data.get("env", {})
    problems += env_problems(env)
    if problems:
        raise BuildOutputError("output: " + "; ".join(problems) + indented(text))
    assert isinstance(cmd, list) and isinstance(cwd, str) and isinstance(env, dict)
    return LaunchSpec(cmd, cwd, env)


def env_problems(env: object) -> list[str]:
    """What is wrong with `build`'s `env`: it must be an object of short string values under valid names."""
    if not isinstance(env, dict):
        return [f"'env' must be an object of string values, got {json_type(env)} {_shown(env)}"]
    problems = []
    for name, value in env.items():
        if not name or "=" in name or "\0" in name:
            problems.append(f"'env' name {_shown(name)} is not a valid variable name")
        elif not isinstance(value, str):
            problems.append(f"'env' value of {name} must be a string, got {json_type(value)} {_shown(value)}")
        elif len(value) > MAX_ENV_VALUE:
            problems.append(f"'env' value of {name} is {len(value)} characters, more than the limit of {MAX_ENV_VALUE}")
        elif "\0" in value:
            problems.append(f"'env' value of {name} holds a NUL character")
    return problems


def json_type(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 200 else text[:200] + "…"


def indented(text: str) -> str:
    """`text` on its own indented lines under a message, cut at a couple of thousand characters."""
    body = text if len(text) <= _SHOWN else text[:_SHOWN] + " …"
    return "\n  " + body.replace("\n", "\n  ")
