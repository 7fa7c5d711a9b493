"""Certificates and keys for the real-cluster lane: a test CA, the API server's serving certificate for
127.0.0.1, and the service-account signing key. Made with `cryptography` (already a dependency), so the
lane needs no openssl binary and clients verify the server as they would in production."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

_PEM = serialization.Encoding.PEM


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(_PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def write_pki(folder: Path) -> dict[str, Path]:
    """Writes ca.crt, server.crt/.key (SANs 127.0.0.1, localhost, kubernetes) and sa.key; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("gpu-wizard real-cluster CA"))
        .issuer_name(_name("gpu-wizard real-cluster CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost"), x509.DNSName("kubernetes")]
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = {
        "ca": folder / "ca.crt",
        "server_cert": folder / "server.crt",
        "server_key": folder / "server.key",
        "sa_key": folder / "sa.key",
    }
    paths["ca"].write_bytes(ca.public_bytes(_PEM))
    paths["server_cert"].write_bytes(server.public_bytes(_PEM))
    paths["server_key"].write_bytes(_key_pem(server_key))
    paths["sa_key"].write_bytes(_key_pem(rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    return paths
