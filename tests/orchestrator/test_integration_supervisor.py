"""The integration supervisor's own rules, in process: a bounded log, and wishes overruling settings."""

from __future__ import annotations

from pathlib import Path

from orchestrator import integration_state
from orchestrator.integrations import LOG_MAX, Configured, Supervisor, _bound_log


def test_a_log_past_its_limit_is_copied_aside_and_emptied_while_its_writer_appends_on(tmp_path: Path) -> None:
    log = tmp_path / "adapter.log"
    with open(log, "ab") as writer:  # as the adapter's stdout is: O_APPEND, so it writes at the new end
        writer.write(b"x" * (LOG_MAX + 10))
        writer.flush()
        _bound_log(log)
        writer.write(b"after\n")
        writer.flush()
    assert log.read_bytes() == b"after\n"
    assert (tmp_path / "adapter.log.1").stat().st_size == LOG_MAX + 10
    _bound_log(log)  # under the limit: left as it is
    assert log.read_bytes() == b"after\n"


def test_settings_enable_and_a_stop_by_hand_overrules_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    lines: list[str] = []
    supervisor = Supervisor(data, [tmp_path / "tree"], "http://127.0.0.1:1", lambda: Configured(("absent",)),
                            lines.append)
    supervisor.reconcile()
    status = integration_state.read_status(data)["absent"]
    assert status.state == "failed" and status.error.startswith(
        "integration absent is not installed (looked in ") and status.error.endswith(
        "install it: `strawpot install integration absent`")
    assert lines == [f"integration absent not started: {status.error}"]
    supervisor.reconcile()
    assert len(lines) == 1  # a failed one is not tried again by itself
    integration_state.say(data, "absent", on=False)
    supervisor.reconcile()
    assert integration_state.read_status(data)["absent"].state == "stopped"
    integration_state.say(data, "absent", on=True)  # a new start: tried again
    supervisor.reconcile()
    assert integration_state.read_status(data)["absent"].state == "failed" and len(lines) == 2
    supervisor.close()
