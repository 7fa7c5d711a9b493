"""An ephemeral self-signed certificate for the demo API: kubectl sends its bearer token only over HTTPS."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

COMMON_NAME = "gpu-wizard-demo"


def _certificate(key: ec.EllipticCurvePrivateKey, days: int) -> x509.Certificate:
    """Self-signed, a CA for itself (kubectl trusts it as the context's certificate-authority) and a server."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, COMMON_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    public = key.public_key()
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # a client clock a little behind still accepts it
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )


def make_certificate(folder: Path, days: int = 30) -> tuple[Path, Path]:
    """Create ``tls.crt`` and ``tls.key`` (owner-only from the start) in ``folder``; returns their paths."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert_path, key_path = folder / "tls.crt", folder / "tls.key"
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key_pem)
    cert_path.write_bytes(_certificate(key, days).public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    # One TLS 1.3 session ticket per connection, as a Kubernetes API server (Go's crypto/tls) sends: a
    # client that resumes sessions skips the certificate's signature and verification on both sides
    # (gpu-wizard's execs no longer do: aiohttp offers no session); OpenSSL's default is two.
    context.num_tickets = 1
    return context


def client_context(cert: Path) -> ssl.SSLContext:
    """A client context trusting the demo certificate (for tests talking raw HTTP to the demo)."""
    return ssl.create_default_context(cafile=str(cert))
