"""`_lean` (httpx without its command-line client) against the httpx it was checked with: still needed, still
working, and an httpx outside the checked range fails here first, before the stand-in meets internals it
was not written for."""

from __future__ import annotations

import subprocess
import sys

import httpx

# httpx/__init__.py of these versions runs `from ._main import main` (under try/except ImportError), and
# `_main` imports click, rich and pygments for the `httpx` console script; `_lean` relies on exactly that.
CHECKED = ((0, 27), (0, 28))
HEAVY = ("httpx._main", "pygments", "rich.syntax", "httpcore", "idna")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


def test_httpx_is_a_version_lean_was_checked_against() -> None:
    major_minor = tuple(int(part) for part in httpx.__version__.split(".")[:2])
    assert major_minor in CHECKED, (
        f"httpx {httpx.__version__}: check that httpx/__init__.py still imports ._main eagerly and that "
        "hub_client/_lean.py still keeps it out (these tests), then add the version to CHECKED; or delete _lean"
    )


def test_plain_httpx_still_loads_its_cli_so_lean_is_still_needed() -> None:
    assert "httpx._main" in _loaded_after("import httpx")  # when this fails, httpx has fixed it: delete _lean


def test_hub_client_loads_httpx_without_its_cli_or_httpcore() -> None:
    assert _loaded_after("import hub_client") == []


def test_idna_loads_when_a_url_names_a_host_that_is_not_ascii() -> None:
    """httpx imports idna (~2% of a cold install's CPU) for host names that are not ASCII only: `_lean` gives it a
    stand-in that imports the real one on first use, and `import idna` elsewhere finds the real module."""
    check = (
        "import hub_client, httpx\n"
        "assert httpx.URL('http://registry.example/').raw_host == b'registry.example'\n"
        "import sys\nassert 'idna' not in sys.modules\n"
        "assert httpx.URL('http://B\u00fccher.example/x').raw_host == b'xn--bcher-kva.example'\n"
        "try:\n    httpx.URL('http://a\u200db.example/')\nexcept httpx.InvalidURL as exc:\n"
        "    assert 'Invalid IDNA hostname' in str(exc), exc\nelse:\n    raise AssertionError('no InvalidURL')\n"
        "import idna\nassert idna.encode('b\u00fccher') == b'xn--bcher-kva' and hasattr(idna, '__file__')"
    )
    assert _loaded_after(check) == ["idna"]


def test_the_real_cli_module_is_still_found_after_lean() -> None:
    loaded = _loaded_after("import hub_client, httpx._main\nassert callable(httpx._main.main.main)")
    assert "httpx._main" in loaded and "pygments" in loaded


def test_a_request_to_an_ascii_host_loads_no_idna_codec() -> None:
    """getaddrinfo encodes a str host with the idna codec (`encodings.idna`, `stringprep`: ~0.5% of a cold install's
    CPU); the transport gives it an ASCII host as bytes, by name (localhost) or address."""
    code = (
        "import sys, threading\n"
        "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
        "class H(BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers()\n"
        "        self.wfile.write(b'ok')\n"
        "    def log_message(self, *a): pass\n"
        "class S(ThreadingHTTPServer):\n"
        "    def server_bind(self):  # without HTTPServer's getfqdn, which encodes with the idna codec itself\n"
        "        import socketserver\n"
        "        socketserver.TCPServer.server_bind(self)\n"
        "server = S(('127.0.0.1', 0), H)\n"
        "assert 'encodings.idna' not in sys.modules\n"
        "threading.Thread(target=server.serve_forever, daemon=True).start()\n"
        "import hub_client, httpx\n"
        "from hub_client._stdlib import StdlibTransport\n"
        "with httpx.Client(transport=StdlibTransport()) as client:\n"
        "    for host in ('127.0.0.1', 'localhost'):\n"
        "        assert client.get(f'http://{host}:{server.server_address[1]}/').text == 'ok'\n"
        "print(' '.join(m for m in ('encodings.idna', 'stringprep') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
