"""A bearer-token service for docker-registry's ``auth: token`` mode, as nvcr.io and Docker Hub use it.

The registry answers 401 with ``WWW-Authenticate: Bearer realm=…,service=…,scope=…``; the client
fetches a JWT from the realm (Basic auth with the user's credentials) and retries with it. This
service signs RS256 JWTs with a throw-away key and self-signed certificate made by ``openssl``
(which the registry trusts through ``rootcertbundle``), so the real registry verifies real tokens.
Anonymous requests get a token without access, like Docker Hub's for a private repository. ``POST
/token`` is the OAuth2 refresh-token grant a client uses with an identity token (``docker login``'s
``identitytoken``): the one in :attr:`TokenServer.identity_token` is granted, any other refused.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ISSUER = "gpu-wizard-test-issuer"
SERVICE = "gpu-wizard-test-registry"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class TokenServer:
    """Issues registry tokens for one user; runs in a thread on a free 127.0.0.1 port."""

    def __init__(self, workdir: Path, username: str, password: str) -> None:
        self.workdir = workdir
        self.username = username
        self.password = password
        self.key = workdir / "token-key.pem"
        self.cert = workdir / "token-cert.pem"
        self.issued: list[str] = []  # scopes granted, for assertions on caching
        self.identity_token = f"idt-{secrets.token_urlsafe(24)}"
        self._server: ThreadingHTTPServer | None = None

    @property
    def realm(self) -> str:
        """The token endpoint the registry points clients at."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/token"

    def registry_config(self) -> str:
        """The ``auth:`` block for the registry's YAML config."""
        return (
            f"auth: {{token: {{realm: '{self.realm}', service: {SERVICE}, issuer: {ISSUER}, "
            f"rootcertbundle: {self.cert}}}}}\n"
        )

    def start(self) -> None:
        """Make the signing key and certificate, then serve ``GET /token``."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        keygen = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        keygen += ["-subj", "/CN=gpu-wizard-test-token", "-keyout", str(self.key), "-out", str(self.cert)]
        subprocess.run(keygen, check=True, capture_output=True)
        der = subprocess.run(
            ["openssl", "x509", "-in", str(self.cert), "-outform", "DER"], check=True, capture_output=True
        ).stdout
        self._x5c = base64.b64encode(der).decode("ascii")
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name="token-server", daemon=True).start()

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def token(self, scope: str, *, granted: bool) -> str:
        """A signed JWT granting pull and push on the scope's repository (or nothing)."""
        access = []
        parts = scope.split(":")
        if granted and len(parts) == 3 and parts[0] == "repository":
            access.append({"type": "repository", "name": parts[1], "actions": ["pull", "push", "delete"]})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self._x5c]}
        claims = {
            "iss": ISSUER,
            "sub": self.username if granted else "",
            "aud": SERVICE,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", str(self.key)],
            input=signing_input.encode(),
            check=True,
            capture_output=True,
        ).stdout
        return f"{signing_input}.{_b64url(signature)}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                scope = query.get("scope", [""])[0]
                auth = self.headers.get("Authorization", "")
                granted = False
                if auth.startswith("Basic "):
                    user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
                    if (user, password) != (outer.username, outer.password):
                        self._reply(401, {"details": "invalid username/password"})
                        return
                    granted = True
                outer.issued.append(scope)
                self._reply(200, {"token": outer.token(scope, granted=granted), "expires_in": 300})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                scope = form.get("scope", [""])[0]
                grant = form.get("grant_type", [""])[0]
                if grant != "refresh_token" or form.get("refresh_token", [""])[0] != outer.identity_token:
                    self._reply(401, {"details": "invalid refresh token"})
                    return
                outer.issued.append(scope)
                self._reply(200, {"access_token": outer.token(scope, granted=True), "expires_in": 300})

            def _reply(self, status: int, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # keep test output clean
                pass

        return Handler
