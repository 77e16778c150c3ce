"""`[install] min_release_age`: how old a version must be before a resolution may choose it (the release cooldown)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strawpot.model.errors import UsageError

if TYPE_CHECKING:
    from strawpot.model.lockfile import Lockfile
    from strawpot.model.settings import Settings

KEY = "install.min_release_age"


def cooldown(settings: Settings) -> tuple[str, float]:
    """The setting as written ("" when not set) and in seconds; a value that is no duration is a usage error."""
    from strawpot.model.durations import parse_duration

    text = str(settings.get(KEY) or "").strip()
    try:
        return text, parse_duration(text or "0")
    except ValueError as exc:
        raise UsageError(f"{settings.origin(KEY)}: {KEY}: {exc}", hint='write a duration such as "3d", "12h" or "30m"'
                         ) from None


def cooldown_change(previous: Lockfile, settings: Settings) -> str:
    """Why the lock is stale when `[install] min_release_age` changed since it was written ("" when it did not)."""
    now = cooldown(settings)[0]
    if previous.min_release_age == now:
        return ""
    was = f'"{previous.min_release_age}"' if previous.min_release_age else "not set"
    is_now = f'"{now}" ({settings.origin(KEY)})' if now else "not set"
    return f" (it was made with [install] min_release_age {was}; the setting is now {is_now})"
