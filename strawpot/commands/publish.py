"""`strawpot publish PATH`: validate a package like the registry does, then upload it (v1 multipart)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import rich_click as click

from strawpot.commands._options import json_option, registry_option
from strawpot.model.plural import count

if TYPE_CHECKING:
    from strawpot.model.errors import StrawpotError
    from strawpot.publishing.prepare import Upload
    from strawpot.registry_choice import Registry

SECTION = "publishing"


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--workspace", is_flag=True, help="Publish every member of the workspace this folder is in.")
@click.option("--version", "version", metavar="V", default=None, help="Version to publish (default: the frontmatter's).")
@click.option("--changelog", metavar="TEXT", default=None, help="What changed (default: the frontmatter's `changelog`).")
@registry_option
@click.option("--dry-run", is_flag=True, help="Show exactly what would be sent, and send nothing.")
@click.option("--all-or-nothing", is_flag=True,
              help="With several packages: publish none when one has a dependency that cannot be satisfied "
                   "(default: hold back that one and those that need it, publish the rest, exit 1).")
@click.option("--allow-unsigned", is_flag=True,
              help="Publish unsigned (no key configured) a package whose earlier version was signed.")
@json_option
def command(
    paths: tuple[Path, ...], workspace: bool, version: str | None, changelog: str | None, registry: str | None,
    dry_run: bool, all_or_nothing: bool, allow_unsigned: bool, as_json: bool,
) -> None:
    """Publish the skill, role, agent, memory or integration in folder PATH.

    Every file but dot-files, VCS folders and `.strawpotignore` matches is uploaded; anything over
    the registry's limits is refused here, before a byte is sent.

    With several folders (`publish skills/* roles/*`) or `--workspace`, the packages go in dependency order;
    packages that depend on each other go together in one all-or-nothing batch; versions the registry already
    holds with the same files are skipped, and a same version with other files is refused before anything is
    sent. A dependency on another of the packages that names no version is published as `==VERSION`. A package
    whose dependency is neither among them nor satisfiable on the registry is held back, with the packages that
    need it, and named; the rest are published and the command exits 1 (`--all-or-nothing`: nothing is sent).

    With a signing key ($STRAWPOT_SIGNING_KEY or `strawpot keys generate`), each version is sent with a signed
    statement of what it is (docs/security.md).
    """
    from strawpot.model.errors import UsageError

    if workspace and paths:
        raise UsageError("give folders or --workspace, not both")
    if not workspace and not paths:
        raise UsageError("missing PATH", hint="`strawpot publish DIR`, `strawpot publish DIR...` or `--workspace`")
    if workspace or len(paths) > 1:
        if version is not None:
            raise UsageError("--version publishes one package; with several, each main file's version is used",
                             hint="set the versions with `strawpot version --bump patch --workspace`")
        _publish_many(paths, workspace, changelog, registry, dry_run, all_or_nothing, allow_unsigned, as_json)
        return
    _publish_one(paths[0], version, changelog, registry, dry_run, allow_unsigned, as_json)


def _publish_one(
    path: Path, version: str | None, changelog: str | None, registry: str | None, dry_run: bool,
    allow_unsigned: bool, as_json: bool,
) -> None:
    from strawpot.commands._options import print_json
    from strawpot.console import err_console, out_console
    from strawpot.publishing.auth import registry_for, require_token
    from strawpot.publishing.prepare import prepare_upload
    from strawpot.publishing.report import upload_lines, upload_payload, warnings

    upload = prepare_upload(path, version=version, changelog=changelog)
    chosen = registry_for(registry)
    url = chosen.url
    for note in warnings(upload):
        err_console.print(f"warning: {note}", markup=False, soft_wrap=True)
    if dry_run:
        if as_json:
            print_json(upload_payload(upload, url, dry_run=True))
        else:
            out_console.print("\n".join(upload_lines(upload, url)), markup=False)
            err_console.print("dry run: nothing was sent", markup=False)
        return
    require_token(chosen)
    from strawpot.publishing.keys import sign_all

    sign_all([upload], chosen, path, allow_unsigned=allow_unsigned)
    result = _send(upload, chosen)
    if as_json:
        print_json(upload_payload(upload, url, dry_run=False, result=result))
        return
    out_console.print(
        f"published {upload.kind.value} {upload.slug} {upload.version} to {url}"
        f" ({count(len(upload.files), 'file')}, {count(upload.total_size, 'byte')})",
        markup=False,
    )


def _publish_many(
    paths: tuple[Path, ...], workspace: bool, changelog: str | None, registry: str | None, dry_run: bool,
    all_or_nothing: bool, allow_unsigned: bool, as_json: bool,
) -> None:
    from strawpot.console import err_console, out_console
    from strawpot.hub import hub_errors, open_client
    from strawpot.model.errors import StrawpotError
    from strawpot.model.layout import Project
    from strawpot.model.workspace import load_workspace
    from strawpot.publishing import many
    from strawpot.publishing.auth import registry_for, require_token
    from strawpot.publishing.report import warnings

    members = list(load_workspace(Project.at(None).dir).members) if workspace else many.load_members(paths)
    uploads = many.prepare_all(members, changelog)
    for note in (f"{upload.kind.value} {upload.slug}: {note}" for upload in uploads for note in warnings(upload)):
        err_console.print(f"warning: {note}", markup=False, soft_wrap=True)
    chosen = registry_for(registry)
    url = chosen.url
    if not dry_run:
        from strawpot.publishing.keys import sign_all

        require_token(chosen)
        sign_all(list(uploads), chosen, Path.cwd(), allow_unsigned=allow_unsigned)
    with open_client(chosen) as client, hub_errors(url):
        planned = many.plan(members, uploads, client, all_or_nothing=all_or_nothing)
        held = StrawpotError(
            f"{count(planned.held_count, 'package')} held back, a dependency cannot be satisfied:\n"
            + "\n".join(f"  {h.describe()}" for h in planned.held_back),
            hint="publish what they need first (or fix the dependency), then run the same command again: "
                 "what is already published is skipped") if planned.held_back else None
        if dry_run:
            if as_json:
                _json_then_exit(many.payload(planned, url, dry_run=True), held)
            for number, step in enumerate(planned.steps, 1):
                out_console.print(f"{number}. {step.describe(url)}", markup=False, highlight=False)
            err_console.print("dry run: nothing was sent", markup=False)
            if held:
                raise held
            return
        outcome = many.run(planned.steps, client, url)
    if as_json:
        _json_then_exit(many.payload(planned, url, dry_run=False), held)
    else:
        for item in outcome.published:
            out_console.print(f"published {item.label}", markup=False, highlight=False)
        if not outcome.published and not held:
            out_console.print(f"nothing to publish: the {count(len(outcome.skipped), 'package')} are on {url} with "
                              "the same files", markup=False, highlight=False)
        elif outcome.published:
            err_console.print(f"{len(outcome.published)} published, {len(outcome.skipped)} already there, to {url}",
                              markup=False)
    if held:
        raise held


def _json_then_exit(document: dict[str, Any], held: StrawpotError | None) -> NoReturn:
    """One JSON document on stdout (what was held back is in it); exit 1 when something was, saying so on stderr."""
    from click.exceptions import Exit

    from strawpot.commands._options import print_json
    from strawpot.console import err_console

    print_json(document)
    if held is None:
        raise Exit(0)
    err_console.print(f"error: {held.message.splitlines()[0]}", markup=False, highlight=False)
    raise Exit(1)


def _send(upload: Upload, registry: Registry) -> dict[str, Any]:
    """POST the upload; a refusal is shown as the server sent it, in one block."""
    import hub_client as hc
    from strawpot.hub import hub_errors, open_client, refuse_non_registry
    from strawpot.model.errors import StrawpotError
    from strawpot.publishing.auth import login_hint

    what = f"{upload.kind.value} {upload.slug} {upload.version}"
    url = registry.url
    with open_client(registry) as client, hub_errors(url):
        try:
            result = client.publish(
                upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files]
            )
        except (hc.ServerError, hc.AuthError, hc.NotFound) as exc:
            if isinstance(exc, hc.NotFound):
                refuse_non_registry(client)
            hint = login_hint(url) if isinstance(exc, hc.AuthError) else None
            raise StrawpotError(
                f"the registry {url} refused {what} (HTTP {exc.status}):\n{exc.message}", hint=hint
            ) from None
    # A success is the server's 201 naming the version it stored; any other 2xx body is not a confirmation.
    if result.get("version") != upload.version:
        raise StrawpotError(
            f"the registry {url} did not confirm {what}: it answered {str(result)[:200]!r}",
            hint=f"check with `strawpot info {upload.kind.value} {upload.slug}` before publishing again",
        )
    from strawpot.model.registry_answer import from_registry

    return dict(from_registry(result))
