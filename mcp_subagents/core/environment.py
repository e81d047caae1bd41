"""The environment child processes (Bash, Grep, Glob) get: this process's, without anything that looks like a secret.

A variable is removed when its name says it holds a credential (`*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`,
`*_PAT`, `*_CREDENTIALS`, the AWS credential variables, `PGPASSWORD`, ...) or HTTP headers, which carry them
(`ANTHROPIC_CUSTOM_HEADERS`, `OTEL_EXPORTER_OTLP_HEADERS`, any `*_HEADER(S)`, `*_COOKIE(S)`, `*_AUTHORIZATION`), or
when its value does (a URL with a password in it, like `DATABASE_URL=postgres://app:hunter2@db/app`; a well-known
key prefix; an `Authorization`, `X-Api-Key` or `Cookie` header; a value that is a bearer or basic credential).
`sandbox.credentials` in the settings names more to remove (`envVars` with mode "deny") and, our own key,
secret-looking ones to keep (`allowEnvVars`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit

from .redaction import MIN_SECRET_LENGTH

PROVIDER_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")

_SECRET_NAMES = frozenset(
    {
        *PROVIDER_KEY_VARIABLES,
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "PGPASSWORD",
        "MYSQL_PWD",
        "REDISCLI_AUTH",
        "GITHUB_PAT",
        "KUBECONFIG_DATA",
        "VAULT_TOKEN",
    }
)
_SECRET_SUFFIXES = ("_KEY", "_PAT", "_AUTH", "_DSN")
_SECRET_WORDS = frozenset(
    {
        *("SECRET", "SECRETS", "TOKEN", "TOKENS", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS"),
        *("APIKEY", "HEADER", "HEADERS", "COOKIE", "COOKIES", "AUTHORIZATION", "BEARER"),
    }
)
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s@:]*:[^/\s@]+@")
_KEY_PREFIXES = re.compile(
    r"^(sk-ant-|sk-proj-|sk-[A-Za-z0-9]{20}|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abposr]-|AKIA[0-9A-Z]{16}|"
    r"ASIA[0-9A-Z]{16}|hf_[A-Za-z0-9]{20}|npm_[A-Za-z0-9]{20})"
)
_HEADER_CREDENTIAL = re.compile(
    r"(?i)(?:\b(?:proxy-)?authorization|\bx-api-key|\bapi[-_]key|\bx-auth-token|\bcookie)\s*[:=]"
    r"|^\s*(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}\s*$"
)


def looks_secret(name: str, value: str) -> bool:
    upper = name.upper()
    if upper in _SECRET_NAMES or upper.endswith(_SECRET_SUFFIXES):
        return True
    if any(word in _SECRET_WORDS for word in upper.split("_")):
        return True
    return bool(_URL_WITH_PASSWORD.search(value) or _KEY_PREFIXES.match(value) or _HEADER_CREDENTIAL.search(value))


def scrubbed_environment(
    base: Mapping[str, str], *, keep: Iterable[str] = (), remove: Iterable[str] = ()
) -> dict[str, str]:
    """`base` without secret-looking variables (except those named in `keep`) and without those named in `remove`."""
    kept, removed = set(keep), set(remove)
    return {
        name: value
        for name, value in base.items()
        if name not in removed and (name in kept or not looks_secret(name, value))
    }


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """Values that must never appear in anything the server writes or returns: those of every secret-looking
    variable, and the passwords inside credential URLs."""
    values: list[str] = []
    for name, value in environ.items():
        if not looks_secret(name, value):
            continue
        values.append(value)
        for match in _URL_WITH_PASSWORD.finditer(value):
            password = _url_password(value[match.start() :])
            if password:
                values += [password, unquote(password)]
    return [value for value in dict.fromkeys(values) if len(value) >= MIN_SECRET_LENGTH]


def _url_password(url: str) -> str | None:
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return None
    credentials, _, _ = netloc.rpartition("@")
    _, colon, password = credentials.partition(":")
    return password if colon else None
