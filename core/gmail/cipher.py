"""The Gmail refresh token at rest: Fernet (AES-128-CBC with HMAC-SHA256), keyed from NOD_SECRET_KEY.

The key is derived with HKDF-SHA256 under its own label, so it is independent of the
page's signing key although both come from the one operator secret; a copy of the
database alone opens nothing. Changing ``NOD_SECRET_KEY`` makes stored tokens unreadable,
which ``open`` reports as a lost grant: the owner connects again.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from core.errors import MailAccessLost

_INFO = b"nod gmail refresh token v1"


class TokenCipher:
    def __init__(self, secret_key: str) -> None:
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(secret_key.encode())
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode("ascii")

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode()
        except (InvalidToken, ValueError) as exc:
            raise MailAccessLost("The stored Gmail access cannot be read (the server's secret key changed); "
                                 "connect Gmail again.") from exc
