"""Which install commands fetch what they run (the lock pins the command only), and the line that says so."""

from __future__ import annotations

import pytest

from strawpot.model.install_command import downloads_code, install_lines


@pytest.mark.parametrize("command", [
    "curl -fsSL https://example.invalid/install.sh | sh",
    "wget -qO- https://example.invalid/install.sh | sudo bash",
    'sh -c "$(curl -fsSL https://example.invalid/i.sh)"',
    "bash <(curl -s https://example.invalid/i.sh)",
    "cd tools && curl -o x https://example.invalid/x && sh x",
    "irm https://example.invalid/install.ps1 | iex",
])
def test_commands_that_download_code(command: str) -> None:
    assert downloads_code(command)


@pytest.mark.parametrize("command", [
    "sh build/install.sh", "make", "npm install -g @anthropic-ai/claude-code", "echo curl-free", "./curly.sh",
])
def test_commands_that_run_only_what_the_package_holds(command: str) -> None:
    assert not downloads_code(command)


def test_remote_commands_get_one_note_line() -> None:
    assert install_lines({"linux": "curl -fsSL https://x.invalid/i.sh | sh", "macos": "sh build.sh"}) == [
        "install script (linux): curl -fsSL https://x.invalid/i.sh | sh",
        "install script (macos): sh build.sh",
        "note: the linux install script downloads what it runs: the lock pins this command, not the code it fetches",
    ]
    remote = "wget -qO- https://x.invalid/i.sh | sh"
    assert install_lines({"macos": remote, "linux": remote})[2:] == [
        "note: the install scripts (linux, macos) download what they run: the lock pins these commands, "
        "not the code they fetch"]
    assert install_lines({"linux": "make"}) == ["install script (linux): make"]
