"""The TLS context the providers' HTTP clients check servers' certificates with, built once per process and the
certificate files it read.

Each SDK client builds its own by default, and loading the system's CA bundle is most of a client's cost (about
20 ms of CPU). Built here, it is the same context the client would build (`httpx2.create_ssl_context`, which reads
`SSL_CERT_FILE` and `SSL_CERT_DIR`), kept as long as neither those variables nor the files it was loaded from
change. The warm server (`cli.warm_server`) builds it before it forks, so a forked server's first Task finds it.
"""

from __future__ import annotations

import os
import ssl
import threading
from collections.abc import Mapping

import httpx2

_CERTIFICATE_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
_FALLBACK_CA_FILES = (
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/cert.pem",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/ca-bundle.pem",
)
"""Where httpcore2 looks for a CA bundle when OpenSSL's compiled-in paths hold none."""

_FileIdentity = tuple[int, int, int, int] | None
_Key = tuple[tuple[str | None, ...], tuple[_FileIdentity, ...]]

_lock = threading.Lock()
_built: tuple[_Key, ssl.SSLContext] | None = None


def verify_context() -> ssl.SSLContext:
    """The context a provider's client verifies servers with: the one built before unless what it was built from
    changed since (the variables are read from the process's environment, as the SDK reads them)."""
    global _built
    key = _key(os.environ)
    with _lock:
        if _built is None or _built[0] != key:
            _built = (key, httpx2.create_ssl_context(verify=True, trust_env=True))
        return _built[1]


def _key(environ: Mapping[str, str]) -> _Key:
    variables = tuple(environ.get(name) for name in _CERTIFICATE_VARIABLES)
    defaults = ssl.get_default_verify_paths()
    paths = (*(value for value in variables if value), defaults.openssl_cafile, defaults.openssl_capath)
    return variables, tuple(_identity(path) for path in (*paths, *_FALLBACK_CA_FILES))


def _identity(path: str) -> _FileIdentity:
    """What changes when a certificate file or folder is replaced or edited."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
