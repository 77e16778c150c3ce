"""`strawpot ui [--port] [--host] [--no-browser]`: serve the local web UI over your projects, runs and schedules."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import rich_click as click

from strawpot.commands._options import project_option

if TYPE_CHECKING:
    from orchestrator.integrations import Supervisor
    from strawpot.model.layout import Project
    from strawpot.model.settings import Settings

SECTION = "sessions"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
STOP_GRACE = 2  # seconds a stopping UI gives open requests (a live page's stream never ends by itself)


@click.command()
@click.option("--port", type=int, default=0, show_default=True, help="Port to listen on (0: a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--allow-remote", is_flag=True, help="Allow a --host other than loopback (anyone who gets the "
              "printed URL can then start and cancel runs).")
@click.option("--no-browser", is_flag=True, help="Print the URL without opening a browser.")
@project_option
def command(port: int, host: str, allow_remote: bool, no_browser: bool, project: Path | None) -> None:
    """Serve a local web page of the projects you have used, their runs and your schedules: agent trees, log
    tails, cancel and resume buttons, the agents' questions to answer, each project's memory (browse, search,
    forget). Opens on this project when run in one.

    The printed URL carries a secret made for this launch; it becomes a cookie, and requests without it are
    refused (403).
    """
    import uvicorn

    from dashboard.app import create_app, home_path
    from dashboard.browser import open_in_browser, redirect_file
    from dashboard.security import new_secret
    from orchestrator.interrupts import sigterm_as_interrupt
    from strawpot.commands._listen import bound_socket
    from strawpot.model.errors import UsageError
    from strawpot.model.layout import Project

    if host not in LOOPBACK and not allow_remote:
        raise UsageError(f"--host {host} would serve the UI beyond this machine",
                         hint="add --allow-remote if you mean it, or leave --host at 127.0.0.1")
    the_project = Project.at(project)
    home = the_project.dir if the_project.exists else None
    from orchestrator.ui_lock import UiHold
    from strawpot.model import folders

    held = UiHold.take(folders.data_dir())  # one UI a data folder: a second is refused, naming this one
    secret = new_secret()
    sock = bound_socket(host, port)
    sock.listen(128)  # connections queue from now on, so the printed URL works at once
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    origin = f"http://{shown}:{sock.getsockname()[1]}"
    held.record(origin)  # in ui.json, where `strawpot integrations` finds the UI (never its secret)
    url = f"{origin}{home_path(home)}?token={secret}"
    click.echo(f"StrawPot UI{f' for {home}' if home else ''}: {url}", err=True)
    # The one scheduler fires schedules while the UI runs, if no `schedule serve` holds its lock.
    from orchestrator import conversation_runner, conversations
    from orchestrator.scheduler import serve_in_background
    from strawpot.config_files import load_settings
    from strawpot.model.folders import data_dir

    serve_in_background(data_dir(), str(load_settings().get("schedule.catch_up")),
                        lambda line: click.echo(line, err=True), int(load_settings().get("runner.max_parallel")))
    # Conversations' tasks (the chat adapters', under /i/{key}) run from here, one at a time per conversation.
    runner = conversation_runner.serve_in_background(conversations.ConversationStore(data_dir()),
                                                     lambda line: click.echo(line, err=True))
    chat_home = load_settings().get("conversations.home")
    app = create_app(home, secret, settings=project_settings, conversations=runner,
                     conversation_home=Path(str(chat_home)).expanduser() if chat_home else None)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=STOP_GRACE))
    # The browser gets a private file that redirects to the URL: its command line is readable by every user.
    # SIGTERM ends the UI as Ctrl-C does (uvicorn raises it again once it has stopped), so the file goes too.
    supervisor = integrations_supervisor(the_project if home else None, origin)
    try:
        with sigterm_as_interrupt(), redirect_file(url) as page:
            supervisor.start()
            if not no_browser:
                open_in_browser(page)
            server.run(sockets=[sock])
    except KeyboardInterrupt:
        click.echo("stopped the UI", err=True)
    finally:
        supervisor.close()  # SIGTERM to each integration's process group (SIGKILL after a grace period)
        held.release()


def integrations_supervisor(home: Project | None, origin: str) -> Supervisor:
    """The supervisor of the integrations `ui.integrations` enables (and `strawpot integrations start|stop`
    asks for), found in the UI's project, then in the global scope; settings are read afresh each pass."""
    from orchestrator.integrations import Configured, Supervisor
    from strawpot.config_files import load_settings
    from strawpot.model.errors import StrawpotError
    from strawpot.model.folders import data_dir, home_dir
    from strawpot.model.kinds import Kind

    last = [Configured()]

    def configured() -> Configured:
        try:
            settings = load_settings()  # the global config and the environment: a project file starts nothing
        except StrawpotError:
            return last[0]  # a config being edited: keep what it said last
        names = tuple(settings.get("ui.integrations"))
        envs = {name: settings.env_for(Kind.INTEGRATION, name) for (kind, name) in settings.env_tables
                if kind is Kind.INTEGRATION}
        last[0] = Configured(names, envs)
        return last[0]

    trees = [*([home.tree_root] if home is not None else []), home_dir()]
    return Supervisor(data_dir(), trees, origin, configured, lambda line: click.echo(line, err=True),
                      project=home.dir if home is not None else None)


def project_settings(project_dir: Path) -> Settings:
    """A project's effective settings, read afresh each time (the UI's pages ask per project, per request)."""
    from strawpot.config_files import load_settings
    from strawpot.model.layout import Project

    return load_settings(Project(project_dir))
