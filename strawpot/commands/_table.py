"""The commands of `strawpot` as a table (name, help section, summary), so finding a command and listing them all in
`strawpot --help` import no command module; tests/commands/test_command_table.py holds it equal to the modules."""

from __future__ import annotations

# A command's name, the SECTION of its module and the summary `strawpot --help` shows for it (the first paragraph
# of its short help or help, one line). After adding or changing a command, `python -m strawpot.commands._table`
# prints the table to paste here.
COMMANDS: dict[str, tuple[str, str]] = {
    'add': ('packages', 'Add packages to strawpot.toml and install them (alias of install).'),
    'agents': ('sessions', 'List the agents of run RUN_ID (see `strawpot sessions`).'),
    'attach': ('sessions',
        'Attach to the tmux session `strawpot-RUN_ID` of a running interactive run (detach again with C-b'
        ' d).'),
    'audit': ('packages',
        'Report locked versions that were yanked, that an advisory names, that are younger than [install]'
        ' min_release_age, or that are unsigned or signed by another publisher.'),
    'cache': ('other',
        'The download cache (archives by sha256, registry answers with their ETags); $STRAWPOT_CACHE_DIR '
        'moves it.'),
    'cancel': ('sessions', "Ask the run's own Denden server to stop an agent and everything below it."),
    'chat': ('sessions',
        "Talk to the project's agents in a conversation: each line you type is a task, run as a headless "
        'session.'),
    'completion': ('other',
        'Print the completion script for SHELL: it completes commands and options, package kinds, the '
        "project's installed roles after --role, and its run ids (attach, cancel, resume, agents, "
        'sessions show).'),
    'config': ('packages',
        'Show the effective settings with their origins (`show`, the default), or change one (`set`).'),
    'doctor': ('sessions',
        'Check each agent of strawpot.lock: wrapper present and built, tools on PATH, required env vars '
        'set; and whether the sandbox ([session] sandbox, [scripts] sandbox) works here; with [session] '
        'runner = "ray", whether the cluster answers and has room for a session now.'),
    'info': ('packages', "Show a package's summary, dependencies, files and published versions."),
    'init': ('packages', 'Create a commented strawpot.toml here (refused if one exists).'),
    'install': ('packages',
        'Install packages and their dependencies, and record them in strawpot.toml and strawpot.lock.'),
    'integrations': ('sessions',
        'The chat integrations (Telegram, Slack, Discord adapters) `strawpot ui` starts and supervises.'),
    'keys': ('publishing',
        'Publisher keys: publishes are signed with yours ($STRAWPOT_SIGNING_KEY, or the key file in the '
        'config folder).'),
    'list': ('packages', 'List installed packages with their versions and whether they match strawpot.lock.'),
    'lock': ('packages',
        'Resolve the requirements in strawpot.toml and write strawpot.lock (locked versions are kept).'),
    'login': ('publishing',
        'Store a token for a registry (checked first), so publish, yank and whoami can use it.'),
    'logout': ('publishing', 'Remove the token `strawpot login` stored for the registry.'),
    'mcp': ('sessions', 'Project memory over the Model Context Protocol (tools: remember, recall, forget).'),
    'memory': ('sessions',
        "The project's memory: what agents remember and recall through Denden, and what their prompts are"
        ' given.'),
    'outdated': ('packages',
        'Compare each locked version with the newest that strawpot.toml allows and the newest published.'),
    'publish': ('publishing', 'Publish the skill, role, agent, memory or integration in folder PATH.'),
    'registry': ('registry',
        'Run the reference registry (StrawHub API v1 + extensions): SQLite and a blob folder by default, '
        'PostgreSQL and an S3 bucket for several workers or hosts.'),
    'remove': ('packages', 'Remove packages from strawpot.toml (alias of uninstall).'),
    'resume': ('sessions',
        "Resume an agent of an ended run: its wrapper's `build` gets `--resume <session id>`."),
    'schedule': ('sessions',
        'Recurring headless sessions (cron + role + task), stored in the data folder ($STRAWPOT_DATA_DIR '
        'moves it).'),
    'search': ('packages', 'Search the registry for packages matching QUERY.'),
    'sessions': ('sessions',
        "List the runs recorded under .strawpot/sessions/ (newest first), with their agents' states and "
        'worktrees.'),
    'setup': ('sessions',
        "Run `<wrapper> setup` of the locked AGENT with this terminal's input and output; exits with its "
        'code.'),
    'start': ('sessions',
        'Start the orchestrator role from the verified, locked environment and wait for it.'),
    'sync': ('packages',
        'Install exactly what strawpot.lock holds and remove every other installed package.'),
    'tree': ('packages',
        'Print the dependency tree recorded in strawpot.lock (a repeated subtree is marked (*); what a '
        'role\'s `skills: ["*"]` or `roles: ["*"]` brings in is marked (via *)).'),
    'trust': ('packages',
        'Record KIND:SLUG (e.g. agent:my-agent) in [scripts] trusted of strawpot.toml, confirm its '
        'install script and tool install commands on this machine (pinned by sha256 in strawpot.lock: a '
        'changed one is asked about again), then build every installed package whose trusted install '
        'script has not run yet.'),
    'ui': ('sessions',
        'Serve a local web page of the projects you have used, their runs and your schedules: agent '
        "trees, log tails, cancel and resume buttons, the agents' questions to answer, each project's "
        'memory (browse, search, forget). Opens on this project when run in one.'),
    'uninstall': ('packages',
        'Remove packages from strawpot.toml, update strawpot.lock, and delete what nothing needs any '
        'more.'),
    'update': ('packages',
        'Update the named packages (or all) to the newest versions the specifiers in strawpot.toml allow.'),
    'validate': ('publishing',
        'Validate the package at PATH and print a one-line summary, or every problem found.'),
    'verify': ('packages',
        "Hash every installed file and compare it with strawpot.lock, the lock's agent tools with each "
        "agent's own AGENT.md, and each locked signer and log index with what installs kept in the cache "
        'folder (no network); exit 5 listing what differs.'),
    'version': ('publishing',
        'Print the version of the package in PATH (default: this folder), or change it in place.'),
    'whoami': ('publishing',
        'Show the user of the token for the registry (STRAWPOT_TOKEN or the stored one).'),
    'why': ('packages',
        "Show every path from a requirement in strawpot.toml to the package KIND SLUG (a step a role's "
        '`*` makes is marked (via *)).'),
    'workspace': ('publishing',
        'A repository of many packages, declared by `[workspace] members = ["skills/*", "roles/*"]` in '
        'its root strawpot.toml; commands run anywhere inside it find that root.'),
    'yank': ('publishing',
        'Yank VERSION of a package: fresh locks avoid it; existing locks still install it.'),
}


def derived() -> dict[str, tuple[str, str]]:
    """The table as the command modules say it (this imports every one of them): what COMMANDS must equal."""
    import importlib
    import inspect
    import pkgutil

    import strawpot.commands as package

    table: dict[str, tuple[str, str]] = {}
    for found in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if found.name.startswith("_"):
            continue
        module = importlib.import_module(f"strawpot.commands.{found.name}")
        text = module.command.short_help or module.command.help or ""
        summary = inspect.cleandoc(text).split("\n\n")[0].replace("\n", " ").strip()  # as rich-click shows it
        table[found.name.replace("_", "-")] = (module.SECTION, summary)
    return table


def _source() -> str:
    """COMMANDS as Python source, from `derived()`."""
    import textwrap

    lines = ["COMMANDS: dict[str, tuple[str, str]] = {"]
    for name, (section, summary) in derived().items():
        head = f"    {name!r}: ({section!r}, "
        if len(head) + len(repr(summary)) <= 108:
            lines.append(f"{head}{summary!r}),")
            continue
        lines.append(head.rstrip())
        parts = textwrap.wrap(summary, 96, drop_whitespace=False)
        lines += [f"        {part!r}" for part in parts[:-1]] + [f"        {parts[-1]!r}),"]
    return "\n".join([*lines, "}"])


if __name__ == "__main__":
    print(_source())
