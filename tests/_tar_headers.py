"""Raw tar headers for tests of hostile archives: sizes, types and fields tarfile itself would not write."""

from __future__ import annotations

import tarfile


def header(name: str, size: int, typeflag: bytes) -> bytes:
    """A ustar header block for `name`, of type `typeflag`, whose size field says `size` (>= 0)."""
    info = tarfile.TarInfo(name)
    info.size, info.type = size, typeflag
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def with_size(block: bytes, size: int) -> bytes:
    """`block` with its size field set in base-256 (any size, negative ones included), checksum redone."""
    field = b"\xff" + (size % (1 << 88)).to_bytes(11, "big") if size < 0 else b"\x80" + size.to_bytes(11, "big")
    block = block[:124] + field + block[136:148] + b" " * 8 + block[156:]
    return block[:148] + f"{sum(block):06o}\0 ".encode() + block[156:]


def pax(*records: tuple[str, str]) -> bytes:
    """A pax header block and its records (`LEN key=value\\n`, LEN counting itself), padded."""
    body = b""
    for key, value in records:
        text = f" {key}={value}\n".encode()
        length = len(text) + len(str(len(text)))
        length += len(str(length)) - len(str(len(text)))
        body += str(length).encode() + text
    return header("././@PaxHeader", len(body), tarfile.XHDTYPE) + body + b"\0" * (-len(body) % 512)
