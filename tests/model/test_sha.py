"""The start-up paths' SHA-256 is hashlib's, without OpenSSL loaded."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from strawpot.model import sha


@given(st.binary(max_size=5000))
def test_the_digests_are_hashlibs(data: bytes) -> None:
    assert sha.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    built = sha.sha256()
    built.update(data[:7])
    built.update(data[7:])
    assert built.hexdigest() == hashlib.sha256(data).hexdigest()


def test_it_loads_no_openssl() -> None:
    code = "import sys\nfrom strawpot.model import sha\nsha.sha256(b'x')\nprint('_hashlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
