"""An ephemeral self-signed certificate for the demo API, so kubectl sends its bearer token.

client-go (kubectl) applies a kubeconfig's user credentials only to ``https://`` servers: over plain
HTTP it sends no token at all, and a server that checks tokens can then never be used. The demo
therefore serves TLS with a certificate made at start (``openssl``, ~10 ms, EC P-256, valid for
127.0.0.1 and localhost) whose PEM goes into the kubeconfig as ``certificate-authority-data``.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path


def openssl_available() -> bool:
    """Whether the ``openssl`` command needed for TLS is installed."""
    return shutil.which("openssl") is not None


def make_certificate(folder: Path, days: int = 30) -> tuple[Path, Path]:
    """Create ``tls.crt`` and ``tls.key`` (owner-only) in ``folder``; returns their paths.

    Raises RuntimeError with openssl's message when it fails.
    """
    cert, key = folder / "tls.crt", folder / "tls.key"
    command = [
        "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", str(key), "-out", str(cert), "-days", str(days), "-subj", "/CN=gpu-wizard-demo",
        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
        "-addext", "extendedKeyUsage=serverAuth",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl could not create the demo certificate: {done.stderr.strip()}")
    key.chmod(0o600)
    return cert, key


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """The server-side TLS context."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def client_context(cert: Path) -> ssl.SSLContext:
    """A client context trusting the demo certificate (for tests talking raw HTTP to the demo)."""
    return ssl.create_default_context(cafile=str(cert))
