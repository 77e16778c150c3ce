"""The environment of every child process that runs package-provided code: an allow-list, never a secret.

Install scripts, tool install hints, wrapper calls (`build`, `setup`) and agents all get their environment
from `child_env` alone. What they get, in order (a later layer adds to or replaces an earlier one):

1. the user's variables on the allow-list (`ALLOWED`, `LC_*`), plus those `[session] pass_env` names
   (a name, or a prefix ending in `*`);
2. the variables the package declares (`metadata.strawpot.env`), with the values the caller resolved;
3. the protocol's own variables (`DENDEN_*`, `STRAWPOT_ROLE`, `INSTALL_DIR`), set by the caller.

Before the protocol layer is added, every variable in `NEVER` (registry tokens, a Denden secret), every
`DENDEN_*` (another run's), every one `[session] hide_env` names and every one whose value holds a known
secret (a token of the config file) is removed from the first two.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from valueclass import Record

# What a program needs to behave like one the user started: where programs are, whose home, which language
# and terminal, where temp files go, which user and shell. LOGNAME is POSIX's name for USER; LANGUAGE, TZ,
# COLORTERM and NO_COLOR only change how text and times are shown. XDG_RUNTIME_DIR and SSH_AUTH_SOCK are
# left out on purpose: they lead to the user's keyring and SSH agent; proxies, whose URLs can hold a
# password, are left to `pass_env` too.
ALLOWED = frozenset({
    "PATH", "HOME", "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR", "TMPDIR", "USER", "LOGNAME", "SHELL", "TZ",
})
ALLOWED_PREFIXES = ("LC_",)
# Windows programs fail to start without these; they hold folders, not secrets.
ALLOWED_WINDOWS = frozenset({
    "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "TEMP", "TMP",
})
# Never passed, whatever asks for them: a package can declare or the user can pass_env none of these.
NEVER = frozenset({"STRAWPOT_TOKEN", "STRAWPOT_TOKEN_REGISTRY", "DENDEN_TOKEN"})
PROTOCOL_PREFIXES = ("DENDEN_",)  # set by the caller for this run only; an inherited one is another run's
_MIN_SECRET = 8  # a shorter "secret" would match innocent values


class EnvPolicy(Record):
    """The user's additions and removals (`[session] pass_env` / `hide_env`) and the secret values to keep home."""

    pass_env: tuple[str, ...] = ()
    hide_env: tuple[str, ...] = ()
    secrets: frozenset[str] = frozenset()


def child_env(
    environ: Mapping[str, str],
    policy: EnvPolicy | None = None,
    *,
    declared: Mapping[str, str] | None = None,
    protocol: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a child process running package-provided code (see the module docstring)."""
    policy = policy or EnvPolicy()
    env = {name: value for name, value in environ.items() if _allowed(name, policy.pass_env)}
    env.update(declared or {})
    secrets = [s for s in policy.secrets if len(s) >= _MIN_SECRET]
    kept = {
        name: value for name, value in env.items()
        if _key(name) not in NEVER and not _key(name).startswith(PROTOCOL_PREFIXES)
        and not _matches(name, policy.hide_env) and not any(secret in value for secret in secrets)
    }
    return {**kept, **(protocol or {})}  # this run's own values, set by our code


def secret_values(environ: Mapping[str, str], tokens: Iterable[str] = ()) -> frozenset[str]:
    """The values no child may see: the registry token of the environment and the config file's tokens."""
    return frozenset(v for v in (environ.get("STRAWPOT_TOKEN", ""), *tokens) if v)


def _key(name: str) -> str:
    return name.upper() if os.name == "nt" else name  # Windows variable names ignore case


def _allowed(name: str, pass_env: Iterable[str]) -> bool:
    key = _key(name)
    if key in ALLOWED or key.startswith(ALLOWED_PREFIXES) or (os.name == "nt" and key in ALLOWED_WINDOWS):
        return True
    return _matches(name, pass_env)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    """`NAME` or `PREFIX*` (the only wildcard: a trailing star)."""
    key = _key(name)
    return any(key.startswith(_key(p[:-1])) if p.endswith("*") else key == _key(p) for p in patterns)
