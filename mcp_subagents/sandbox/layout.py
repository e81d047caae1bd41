"""What a sandboxed command sees of the filesystem, as bubblewrap arguments.

The whole filesystem is mounted read-only; the writable areas (the working directory, the host's roots,
`filesystem.allowWrite`) are bound read-write on top, then the protected paths inside them (`denyWrite`, the
files that configure git, the shell, editors and this server) read-only again, then the hidden paths (secrets, the
state directory, `denyRead`, files Read deny rules name) are covered: a file by an unreadable empty file, a
directory by an unreadable empty tmpfs (with the `allowRead` paths inside it bound back). `/tmp` is a private
directory of the run, and `/run`, where the sockets of system services live, is empty.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from pathlib import Path

SECRET_PATHS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".git-credentials",
    ".vault-token",
    ".password-store",
    ".terraform.d",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/op",
    ".config/google-chrome",
    ".config/chromium",
    ".mozilla",
    ".local/share/keyrings",
    ".claude.json",
    ".claude/.credentials.json",
    ".bash_history",
    ".zsh_history",
)
"""Under the home directory: credentials, keys, tokens, browser profiles and shell history."""

PROTECTED_NAMES = (
    ".git/hooks",
    ".git/config",
    ".gitmodules",
    ".claude",
    ".mcp.json",
    ".husky",
    ".envrc",
    ".vscode",
    ".idea",
    ".gitconfig",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    ".ripgreprc",
)
"""At the top of each writable area: files that make git, shells, editors or this server run code or change its
rules. They stay read-only inside the sandbox."""

MADE_WHEN_ABSENT = (".claude",)
"""Protected folders made, empty, in the working directory and the host's roots when they have none: a command could
otherwise create one holding settings (permission rules, hooks), agents or skills that the next Task obeys. An empty
folder is what Claude Code leaves there itself, and git does not list it."""
MASKED_WHEN_ABSENT = (".mcp.json",)
"""Protected files a command must not create in the working directory and the host's roots (the project's MCP
servers): while a command runs, an empty read-only file stands where they would be, and it is removed after."""

PROXY_SOCKET = "/run/mcp-subagents/proxy.sock"
"""Where the proxy's Unix socket appears inside the sandbox."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    cwd: Path
    private_tmp: Path
    placeholder_file: Path
    """An empty file nobody may read, bound over each hidden file."""
    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    readable_again: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()
    """Protected paths that do not exist: a read-only placeholder stands there so nothing can create them."""
    unix_sockets: tuple[Path, ...] = ()
    hide_run: bool = True
    proxy_socket: Path | None = None
    hidden_reasons: dict[Path, str] = field(default_factory=lambda: dict[Path, str](), compare=False)


def bwrap_arguments(layout: Layout) -> list[str]:
    """bwrap's options (without the binary and the command) for `layout`."""
    args = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-net"]
    args += ["--unshare-cgroup-try", "--cap-drop", "ALL"]
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if layout.hide_run and Path("/run").is_dir():
        args += ["--tmpfs", "/run"]
        for socket in layout.unix_sockets:
            args += ["--bind", str(socket), str(socket)]
    if layout.proxy_socket is not None:
        args += ["--ro-bind", str(layout.proxy_socket), PROXY_SOCKET]
    args += ["--bind", str(layout.private_tmp), "/tmp"]
    for path in _outermost(layout.writable):
        args += ["--bind", str(path), str(path)]
    for path in layout.read_only:
        args += ["--ro-bind", str(path), str(path)]
    for path in layout.masked:
        args += ["--ro-bind", str(layout.placeholder_file), str(path)]
    for path in _outermost(layout.hidden):
        args += _hide(path, layout)
    args += ["--chdir", str(layout.cwd)]
    return args


def _hide(path: Path, layout: Layout) -> list[str]:
    if not path.is_dir():
        return ["--ro-bind", str(layout.placeholder_file), str(path)]
    args = ["--tmpfs", str(path)]
    inside = [again for again in layout.readable_again if again != path and again.is_relative_to(path)]
    for again in _outermost(inside):
        args += ["--ro-bind", str(again), str(again)]
    # Without readable paths inside, nothing may even be listed; with them, they must be reachable by name.
    args += ["--chmod", "0711" if inside else "0000", str(path), "--remount-ro", str(path)]
    return args


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Paths without duplicates, or any path below another in the list, in a stable order."""
    unique = sorted(set(paths), key=lambda path: (len(path.parts), str(path)))
    kept: list[Path] = []
    for path in unique:
        if not any(path.is_relative_to(parent) for parent in kept):
            kept.append(path)
    return kept


def resolve_setting_path(entry: str, *, home: Path, project: Path) -> Path:
    """A path from `sandbox.filesystem`: `//abs` and `/abs` are absolute, `~/x` is under the home directory, and
    `./x` or `x` is under the project directory."""
    if entry.startswith("//"):
        raw = "/" + entry.lstrip("/")
    elif entry == "~" or entry.startswith("~/"):
        raw = str(home / entry[2:])
    elif entry.startswith("/"):
        raw = entry
    else:
        raw = str(project / entry.removeprefix("./"))
    return Path(os.path.realpath(raw))


def existing(paths: Iterable[Path]) -> list[Path]:
    return [path for path in paths if os.path.lexists(path)]


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def protected_paths(writable: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for root in writable:
        pointer = root / ".git"
        if os.path.isfile(pointer):  # a worktree's (or submodule's) `gitdir:` line: which repository git obeys
            found.append(real(pointer))
        for name in PROTECTED_NAMES:
            candidate = root / name
            if os.path.exists(candidate):  # a symlink is protected where it leads
                found.append(real(candidate))
    return found


def absent_protected_paths(areas: Iterable[Path], *, masked_now: Container[Path] = ()) -> list[Path]:
    """The protected paths missing at the top of the project's writable `areas` (each given once): the folders of
    `MADE_WHEN_ABSENT` are made (and then protected as they exist), the files of `MASKED_WHEN_ABSENT` are returned,
    to be masked. A path in `masked_now` (another command's placeholder) counts as missing. An area this user cannot
    write in is left alone: a command could not create anything there either, and a placeholder could not be put
    there."""
    masked: list[Path] = []
    for area in areas:
        if not os.access(area, os.W_OK):
            continue
        for name in MADE_WHEN_ABSENT:
            folder = area / name
            if not os.path.lexists(folder):
                with contextlib.suppress(OSError):  # made meanwhile, or the area's file system refused
                    folder.mkdir(mode=0o755)
        for name in MASKED_WHEN_ABSENT:
            path = area / name
            if path in masked_now or not os.path.lexists(path):
                masked.append(path)
    return masked


def remove_placeholder(path: Path) -> None:
    """Remove what bubblewrap left where it masked a missing file: an empty regular file (anything else is not
    its)."""
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and info.st_size == 0:
            path.unlink()


def secret_paths(home: Path) -> list[Path]:
    return [real(home / name) for name in SECRET_PATHS if os.path.lexists(home / name)]
