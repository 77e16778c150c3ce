"""What a publish sends (or would send), as text for people and as a versioned JSON payload."""

from __future__ import annotations

import hashlib
from typing import Any

from strawpot.model.install_command import install_lines
from strawpot.model.plural import count
from strawpot.model.registry_answer import snake
from strawpot.publishing.prepare import Upload


def upload_payload(upload: Upload, url: str, *, dry_run: bool, result: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report of a publish: package, endpoint, fields, every file, total size, server answer."""
    payload: dict[str, Any] = {
        "dry_run": dry_run,
        "registry": url,
        "endpoint": f"POST {url}/api/v1/{upload.kind.plural}",
        "package": {"kind": upload.kind.value, "name": upload.slug, "version": upload.version},
        "version_rewritten": upload.version_rewritten,
        "fields": {snake(name): value for name, value in upload.fields.items()},  # the form's field names
        "files": [
            {
                "path": f.path,
                "size": f.size,
                "sha256": hashlib.sha256(f.data).hexdigest(),
                "executable": f.executable,
                "registry_executable": f.registry_executable,
            }
            for f in upload.files
        ],
        "file_count": len(upload.files),
        "total_size": upload.total_size,
        "install": dict(sorted(upload.package.install.items())),
    }
    if result is not None:
        payload["result"] = result
    return payload


def upload_lines(upload: Upload, url: str) -> list[str]:
    """The dry-run report: the request, each form field, each file with size and exec bit, the total."""
    lines = [f"would publish {upload.kind.value} {upload.slug} {upload.version} to {url}", ""]
    lines.append(f"POST {url}/api/v1/{upload.kind.plural}  (multipart/form-data)")
    lines.append("fields:")
    width = max(len(name) for name in upload.fields)
    for name, value in upload.fields.items():
        shown = value if value else '""'
        lines.append(f"  {name.ljust(width)}  {shown}")
    size_width = max((len(str(f.size)) for f in upload.files), default=1)
    lines.append(f"files ({len(upload.files)}):")
    for f in upload.files:
        mode = "rwxr-xr-x" if f.registry_executable else "rw-r--r--"
        lines.append(f"  {str(f.size).rjust(size_width)}  {mode}  {f.path}")
    lines.append(f"total: {count(upload.total_size, 'byte')} in {count(len(upload.files), 'file')}")
    lines += install_lines(upload.package.install)
    return lines


def warnings(upload: Upload) -> list[str]:
    """Things that will not come out as the author might expect."""
    notes = []
    if upload.version_rewritten and upload.source_version is not None:
        notes.append(
            f"{upload.kind.main_file} says version {upload.source_version}; "
            f"uploading it with `version: {upload.version}` (--version wins)"
        )
    notes += upload.package.warnings()
    lost = upload.lost_exec_bits
    if lost:
        notes.append(
            "the registry keeps executable bits only for the programs a package declares (metadata.strawpot.bin); "
            f"these will install without it: {', '.join(lost)}"
        )
    return notes
