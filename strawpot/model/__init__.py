"""Package formats, the project manifest, the lockfile and the installed tree."""
