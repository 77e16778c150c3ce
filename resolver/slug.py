"""The shape of a package slug (DESIGN §3), on its own so checking a name loads no other part of the resolver."""

from __future__ import annotations

import re

SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")
"""The shape of a package slug (DESIGN §3)."""
SLUG_MAX_LENGTH = 64
