"""The environment of package-provided code (strawpot/model/child_env.py): an allow-list, never a secret."""

from __future__ import annotations

import pytest

from strawpot.model.child_env import EnvPolicy, child_env, secret_values

USER_ENV = {
    "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "USER": "u",
    "STRAWPOT_TOKEN": "sh_plantedtoken", "STRAWPOT_TOKEN_REGISTRY": "http://r", "ANTHROPIC_API_KEY": "sk-ant-planted",
    "DENDEN_TOKEN": "another-run", "DENDEN_ADDR": "unix:/other", "AWS_SECRET": "aws", "AWS_REGION": "eu",
    "SSH_AUTH_SOCK": "/run/ssh", "GIT_ASKPASS_SECRET": "xx sh_configtoken1 xx",
}


def test_only_the_allow_list_is_inherited() -> None:
    assert child_env(USER_ENV) == {k: USER_ENV[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER")}


@pytest.mark.parametrize(
    ("policy", "declared", "protocol", "expected"),
    [
        # pass_env adds names and prefixes; it can never add a token or another run's Denden variables
        (EnvPolicy(pass_env=("AWS_*", "SSH_AUTH_SOCK", "STRAWPOT_TOKEN", "DENDEN_TOKEN", "DENDEN_ADDR")), {}, {},
         {"AWS_SECRET": "aws", "AWS_REGION": "eu", "SSH_AUTH_SOCK": "/run/ssh"}),
        # a declared variable arrives; hide_env wins over it and over the allow-list
        (EnvPolicy(hide_env=("ANTHROPIC_API_KEY", "LC_*")), {"ANTHROPIC_API_KEY": "x", "GITHUB_TOKEN": "g"}, {},
         {"GITHUB_TOKEN": "g"}),
        # a package may not declare the registry token into its environment
        (EnvPolicy(), {"STRAWPOT_TOKEN": "sh_plantedtoken"}, {}, {}),
        # a value holding a known secret is dropped whatever its name
        (EnvPolicy(pass_env=("GIT_ASKPASS_SECRET",), secrets=frozenset({"sh_configtoken1"})), {}, {}, {}),
        # the protocol's own values are this run's: they are set, the inherited ones are not
        (EnvPolicy(), {}, {"DENDEN_ADDR": "unix:/mine", "DENDEN_TOKEN": "mine", "INSTALL_DIR": "/p"},
         {"DENDEN_ADDR": "unix:/mine", "DENDEN_TOKEN": "mine", "INSTALL_DIR": "/p"}),
    ],
)
def test_policy_layers(policy: EnvPolicy, declared: dict[str, str], protocol: dict[str, str],
                       expected: dict[str, str]) -> None:
    env = child_env(USER_ENV, policy, declared=declared, protocol=protocol)
    inherited = {k: USER_ENV[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER")}
    if "LC_*" in policy.hide_env:
        del inherited["LC_ALL"]
    assert env == {**inherited, **expected}


def test_secret_values_are_the_env_token_and_the_config_tokens() -> None:
    assert secret_values(USER_ENV, ["sh_a", ""]) == {"sh_plantedtoken", "sh_a"}
    assert secret_values({}) == frozenset()
