"""Where a glob pattern starts: the literal directories in front of its first wildcard.

One definition for the Glob tool (which walks from there) and the permission check (which judges that
directory), so the two can never disagree about which directory a pattern searches.
"""

from __future__ import annotations


def glob_flags() -> int:
    """The wcmatch flags of the Glob tool: `**` crosses directories and `{a,b}` alternates."""
    from wcmatch import glob as wcglob  # imported on first use: keeps it off the server's start-up path

    return wcglob.GLOBSTAR | wcglob.BRACE


def glob_root(pattern: str) -> tuple[str, str]:
    """Split `src/app/**/*.ts` into the directory to walk (`src/app`) and what to match there (`**/*.ts`).

    A pattern without wildcards is all literal: `(pattern, "")`. A pattern starting with a wildcard after `/`
    walks from `/`.
    """
    from wcmatch import glob as wcglob

    flags = glob_flags()
    parts = pattern.split("/")
    literal: list[str] = []
    for index, part in enumerate(parts):
        if wcglob.is_magic(part, flags=flags):
            return "/".join(literal) or ("/" if pattern.startswith("/") else ""), "/".join(parts[index:])
        literal.append(part)
    return pattern, ""
