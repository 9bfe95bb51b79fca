"""Product public keys: one PEM, or a product's key history (``GET /products/{id}/keys``)."""

from __future__ import annotations

from typing import Sequence, Union

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from ._wire import PublicKey
from .errors import LicensorError

#: A public key as SPKI PEM text (str or bytes), an X.509 certificate PEM, or a loaded key.
PublicKeyInput = Union[str, bytes, PublicKey]
#: One key, or several: any of them may have signed.
PublicKeys = Union[PublicKeyInput, Sequence[PublicKeyInput]]

_KEY_TYPES = (ed25519.Ed25519PublicKey, rsa.RSAPublicKey, ec.EllipticCurvePublicKey)


def read_public_keys(keys: PublicKeys) -> list[PublicKey]:
    """Reads every key once; a key that cannot be read is a programming error: ``INVALID_KEY``."""
    items: Sequence[PublicKeyInput] = [keys] if isinstance(keys, (str, bytes, *_KEY_TYPES)) else keys
    if len(items) == 0:
        raise LicensorError("INVALID_KEY", "at least one public key is needed")
    return [_read(key, index) for index, key in enumerate(items)]


def _read(key: PublicKeyInput, index: int) -> PublicKey:
    if isinstance(key, _KEY_TYPES):
        return key
    if not isinstance(key, (str, bytes)):
        raise LicensorError("INVALID_KEY", f"public key {index + 1} is not PEM text or a public key")
    data = key.encode("utf-8") if isinstance(key, str) else key
    try:
        loaded = x509.load_pem_x509_certificate(data).public_key() if b"-----BEGIN CERTIFICATE-----" in data else load_pem_public_key(data)
    except (ValueError, TypeError):
        # A private key fails here too: verifying needs only the public half.
        raise LicensorError("INVALID_KEY", f"public key {index + 1} cannot be read: not a PEM public key or certificate") from None
    if not isinstance(loaded, _KEY_TYPES):
        raise LicensorError("INVALID_KEY", f"public key {index + 1} is not an Ed25519, RSA or ECDSA key")
    return loaded
