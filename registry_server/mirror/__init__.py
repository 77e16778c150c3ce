"""`registry serve --upstream URL`: this registry in front of others, local names first, upstream cached."""
