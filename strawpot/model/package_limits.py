"""What one package may hold: how many files, how many bytes a file, how many in all."""

from __future__ import annotations

MAX_FILES = 100
MAX_FILE_SIZE = 10 * 1024 * 1024
MAX_TOTAL_SIZE = 50 * 1024 * 1024
