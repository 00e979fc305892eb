"""One TLS context for every httpx client Nod makes (the model servers, Telegram's Bot API).

httpx loads the CA bundle again for each client it builds, about 20 ms of CPU each; Nod
builds several per start and per wiring. An ``SSLContext`` is safe to share between clients,
so this makes httpx's own default once per process and hands the same one to all.
"""

from __future__ import annotations

import ssl
from functools import cache

import httpx


@cache
def tls_context() -> ssl.SSLContext:
    """httpx's default: certificates required and host names checked, from ``SSL_CERT_FILE`` or
    ``SSL_CERT_DIR`` when set, else certifi's bundle."""
    return httpx.create_ssl_context()
