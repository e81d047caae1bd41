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

from ..permissions.protected import GUARDED_NAMES

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

MADE_WHEN_ABSENT = (".claude",)
"""Guarded folders made, empty, in the working directory and the host's roots when they have none: a command could
otherwise create one holding settings (permission rules, hooks), agents or skills that the next Task obeys. An empty
folder is what Claude Code leaves there itself, and git does not list it."""
MASKED_WHEN_ABSENT: dict[str, bool] = {
    ".mcp.json": False,
    "CLAUDE.md": False,
    "CLAUDE.local.md": False,
    ".agents": True,
}
"""Guarded names this server itself reads at the top of a project (name -> is a folder): while a command runs, a
read-only empty placeholder stands where one is missing, so that no other task of this server can load a planted
one before the command ends; it is removed after. Guarded names a command creates elsewhere are moved aside when it
ends (`guarded`)."""

PROXY_SOCKET = "/run/mcp-subagents/proxy.sock"
"""Where the proxy's Unix socket appears inside the sandbox."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    cwd: Path
    private_tmp: Path
    placeholder_file: Path
    """An empty file nobody may read, bound over each hidden file."""
    mask_file: Path
    """An empty read-only file, bound where a guarded file is missing."""
    mask_folder: Path
    """An empty read-only folder, bound where a guarded folder is missing."""
    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    readable_again: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()
    """Guarded files that do not exist: a read-only placeholder stands there so nothing can create them."""
    masked_folders: tuple[Path, ...] = ()
    """The same for guarded folders."""
    readable_system: tuple[Path, ...] = ()
    """Folders under /tmp that commands need to read (the interpreter that puts the seccomp filter on): bound back
    over the private /tmp."""
    seccomp_fd: int | None = None
    """A file descriptor bubblewrap reads the seccomp filter from, for the whole sandbox."""
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
    for path in layout.readable_system:
        args += ["--ro-bind", str(path), str(path)]
    for path in _outermost(layout.writable):
        args += ["--bind", str(path), str(path)]
    for path in layout.read_only:
        args += ["--ro-bind", str(path), str(path)]
    for path in layout.masked:
        args += ["--ro-bind", str(layout.mask_file), str(path)]
    for path in layout.masked_folders:
        args += ["--ro-bind", str(layout.mask_folder), str(path)]
    for path in _outermost(layout.hidden):
        args += _hide(path, layout)
    if layout.seccomp_fd is not None:
        args += ["--seccomp", str(layout.seccomp_fd)]
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


def top_level_guarded(areas: Iterable[Path]) -> list[Path]:
    """Guarded names at the top of areas that are not searched (`sandbox.filesystem.allowWrite` folders)."""
    found: list[Path] = []
    for root in areas:
        for name in GUARDED_NAMES:
            if os.path.lexists(root / name):
                found.append(root / name)
    return found


def make_absent_folders(areas: Iterable[Path]) -> None:
    """Make the folders of `MADE_WHEN_ABSENT` where the project's writable `areas` have none (and this user may
    write): then they exist, and are guarded as they exist."""
    for area in areas:
        if not os.access(area, os.W_OK):
            continue
        for name in MADE_WHEN_ABSENT:
            folder = area / name
            if not os.path.lexists(folder):
                with contextlib.suppress(OSError):  # made meanwhile, or the area's file system refused
                    folder.mkdir(mode=0o755)


def absent_guarded(areas: Iterable[Path], *, masked_now: Container[Path] = ()) -> tuple[list[Path], list[Path]]:
    """The guarded names this server reads that are missing at the top of the project's writable `areas` (each
    given once), as (files, folders) to be masked. A path in `masked_now` (another command's placeholder) counts as
    missing. An area this user cannot write in is left alone: a command could not create anything there either, and
    a placeholder could not be put there."""
    files: list[Path] = []
    folders: list[Path] = []
    for area in areas:
        if not os.access(area, os.W_OK):
            continue
        for name, is_folder in MASKED_WHEN_ABSENT.items():
            path = area / name
            if path in masked_now or not os.path.lexists(path):
                (folders if is_folder else files).append(path)
    return files, folders


def remove_placeholder(path: Path) -> None:
    """Remove what bubblewrap left where it masked a missing file or folder: an empty regular file or an empty
    folder (anything else is not its)."""
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and info.st_size == 0:
            path.unlink()
        elif stat.S_ISDIR(info.st_mode):
            path.rmdir()  # fails, and is left, unless empty


def secret_paths(home: Path) -> list[Path]:
    return [real(home / name) for name in SECRET_PATHS if os.path.lexists(home / name)]
