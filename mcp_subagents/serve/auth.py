"""Bearer tokens for HTTP: the token file, the one-token variable, their verifier, and who a request comes from.

A token file has one `principal:token` per line (a bare token belongs to the principal `default`); blank lines and
`#` comments are skipped. Tokens are kept only as SHA-256 digests and compared in constant time against every
entry, so neither the matching principal nor a token's length shows in the timing. Nothing here logs a token.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp.server.auth.provider import AccessToken, TokenVerifier

from ..core.errors import ConfigError
from ..core.principals import token_principal
from ..mcp.caller import PrincipalToken

logger = logging.getLogger(__name__)

TOKEN_ENV = "MCP_SUBAGENTS_AUTH_TOKEN"
DEFAULT_PRINCIPAL = "default"
MIN_TOKEN_LENGTH = 16
TOKEN_ISSUER = "mcp-subagents:token-file"
"""The `iss` our token-file tokens carry, so the SDK's session-ownership checks tell them from OAuth ones."""

_PRINCIPAL_NAME = re.compile(r"^[A-Za-z0-9._@+-]{1,64}$")
_BEARER_TOKEN = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")
"""RFC 6750's b64token: what an `Authorization: Bearer` header can carry."""
HOW_TO_MAKE_A_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


@dataclass(frozen=True, slots=True)
class TokenEntry:
    principal: str
    digest: bytes


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


def parse_tokens(lines: Sequence[str], *, origin: str) -> tuple[TokenEntry, ...]:
    """Entries from `principal:token` lines.

    Raises:
        ConfigError: a line that is not a usable entry, naming its number (never its token).
    """
    entries: list[TokenEntry] = []
    seen: dict[bytes, int] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, separator, token = line.partition(":")
        if not separator:
            name, token = DEFAULT_PRINCIPAL, line
        name, token = name.strip(), token.strip()
        where = f"{origin}, line {number}"
        if not _PRINCIPAL_NAME.match(name):
            raise ConfigError(f"{where}: a principal name is 1-64 letters, digits or . _ @ + -")
        _check_token(token, where)
        digest = _digest(token)
        if digest in seen:
            raise ConfigError(f"{where}: the same token as line {seen[digest]}; give each principal its own token")
        seen[digest] = number
        entries.append(TokenEntry(token_principal(name), digest))
    return tuple(entries)


def _check_token(token: str, where: str) -> None:
    if not _BEARER_TOKEN.match(token):
        raise ConfigError(f"{where}: the token has characters a Bearer header cannot carry (or is empty)")
    if len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(
            f"{where}: the token is shorter than {MIN_TOKEN_LENGTH} characters; make one with {HOW_TO_MAKE_A_TOKEN}"
        )


def read_token_file(path: Path) -> tuple[TokenEntry, ...]:
    """The entries of a private token file.

    Raises:
        ConfigError: the file cannot be read, is readable or writable by others, or has a bad line.
    """
    try:
        with path.open(encoding="utf-8") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ConfigError(f"--auth-token-file {path}: not a regular file")
            if info.st_mode & 0o077:
                raise ConfigError(
                    f"--auth-token-file {path} can be read or changed by other users "
                    f"(mode {stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {path}"
                )
            lines = file.read().splitlines()
    except OSError as exc:
        raise ConfigError(f"--auth-token-file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"--auth-token-file {path}: not UTF-8 text") from None
    entries = parse_tokens(lines, origin=str(path))
    if not entries:
        raise ConfigError(f"--auth-token-file {path} has no tokens; add lines like alice:TOKEN")
    return entries


def env_token(environ: Mapping[str, str]) -> tuple[TokenEntry, ...]:
    """The single token of `MCP_SUBAGENTS_AUTH_TOKEN`, for the principal `default`; none when unset."""
    token = environ.get(TOKEN_ENV, "").strip()
    if not token:
        return ()
    _check_token(token, TOKEN_ENV)
    return (TokenEntry(token_principal(DEFAULT_PRINCIPAL), _digest(token)),)


class StaticTokenVerifier(TokenVerifier):
    """Accepts the tokens of the token file and the variable. The file is read again when it changes, so people
    can be added or removed without a restart; a change that breaks the file is logged and the old tokens stay."""

    def __init__(self, path: Path | None, extra: tuple[TokenEntry, ...] = (), *, scopes: Sequence[str] = ()) -> None:
        self._path = path
        self._extra = extra
        self._scopes = list(scopes)
        """A token-file token is the server's own grant: it carries whatever scopes OAuth tokens must have."""
        self._stamp: tuple[int, int, int] | None = None
        self._entries: tuple[TokenEntry, ...] = ()
        if path is not None:
            self._stamp = self._file_stamp()
            self._entries = read_token_file(path)

    @property
    def entries(self) -> tuple[TokenEntry, ...]:
        return (*self._entries, *self._extra)

    def _file_stamp(self) -> tuple[int, int, int] | None:
        assert self._path is not None
        try:
            info = self._path.stat()
        except OSError:
            return None
        return info.st_ino, info.st_mtime_ns, info.st_size

    def _reload_if_changed(self) -> None:
        if self._path is None:
            return
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            self._entries = read_token_file(self._path)
        except ConfigError as exc:
            logger.error("token file not reloaded, the previous tokens stay in use: %s", exc.message)
            return
        logger.info("token file reloaded: %d token(s)", len(self._entries))

    def match(self, token: str) -> str | None:
        """The principal of `token`, or None. Every entry is compared, whichever matches."""
        self._reload_if_changed()
        presented = _digest(token)
        found: str | None = None
        for entry in self.entries:
            if hmac.compare_digest(presented, entry.digest):
                found = entry.principal
        return found

    async def verify_token(self, token: str) -> AccessToken | None:
        principal = self.match(token)
        if principal is None:
            return None
        return PrincipalToken(
            token=token,
            client_id=principal,
            scopes=list(self._scopes),
            subject=principal,
            claims={"iss": TOKEN_ISSUER},
            principal=principal,
        )


class TokenVerifiers(TokenVerifier):
    """Tries each verifier in turn (token file first, then OAuth); the first that knows the token wins."""

    def __init__(self, verifiers: Sequence[TokenVerifier]) -> None:
        self._verifiers = tuple(verifiers)

    async def verify_token(self, token: str) -> AccessToken | None:
        for verifier in self._verifiers:
            access = await verifier.verify_token(token)
            if access is not None:
                return access
        return None
