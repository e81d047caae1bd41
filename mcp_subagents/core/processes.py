"""Processes that tools start, and making sure none of them outlives what it belongs to.

A command can leave its process group (`setsid`, `nohup ... &` after the shell exits): killing the group is not
enough. Every command that runs outside the sandbox carries a tag in its environment (`PROCESS_TAG_VARIABLE`), which
its children inherit; `kill_tagged` finds them through `/proc` wherever they went. The server process is also a
child subreaper, so what detaches is re-parented to it rather than to init: `kill_descendants` at exit reaches even
a process that cleared its environment, and `reap_adopted` collects the ones that exit on their own.

Inside the sandbox none of this is needed: the command has its own PID namespace, which dies with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import secrets
import signal
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

logger = logging.getLogger(__name__)

PROCESS_TAG_VARIABLE = "MCP_SUBAGENTS_PROCESS_TAG"
"""Set in the environment of every command run outside the sandbox; its value names the command."""

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_runtime_prefix = secrets.token_hex(4)


def _new_runtime_prefix() -> None:
    """A forked process is another server (the warm server forks one per host): its commands get tags of their
    own, so one server's `kill_tagged` never reaches a sibling's commands."""
    global _runtime_prefix
    _runtime_prefix = secrets.token_hex(4)


os.register_at_fork(after_in_child=_new_runtime_prefix)


def new_tag() -> str:
    """A tag for one command; every tag of this server process starts with the same prefix."""
    return f"{_runtime_prefix}-{secrets.token_hex(6)}"


@dataclass(slots=True)
class ProcessGroups:
    """What a task's Bash commands left running (`cmd &`), so stopping the task can kill it: the process groups
    and the tags of the commands."""

    ids: set[int] = field(default_factory=lambda: set[int]())
    tags: set[str] = field(default_factory=lambda: set[str]())

    def kill_all(self) -> None:
        for group_id in self.ids:
            signal_group(group_id, signal.SIGKILL)
        if self.tags:
            kill_tagged(self.tags)
        self.ids.clear()
        self.tags.clear()


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one we may not signal counts: it is alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(group_id: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group_id, signum)


def group_alive(group_id: int) -> bool:
    try:
        os.killpg(group_id, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


# ---- finding processes through /proc ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stat:
    pid: int
    ppid: int
    state: str
    session: int


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            raw = file.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain anything, so split after its last ")".
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return _Stat(pid=pid, state=fields[0].decode(), ppid=int(fields[1]), session=int(fields[3]))
    except (IndexError, ValueError):
        return None


def _all_pids() -> Iterator[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if name.isdigit():
            yield int(name)


def _tag_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            environ = file.read()
    except OSError:  # gone, or not ours to read (another user, or a process that made itself non-dumpable)
        return None
    marker = PROCESS_TAG_VARIABLE.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(marker):
            return entry[len(marker) :].decode(errors="replace")
    return None


def tagged_pids(tags: Iterable[str]) -> list[int]:
    """Live processes whose environment carries one of `tags`."""
    wanted = set(tags)
    own = os.getpid()
    return [pid for pid in _all_pids() if pid != own and _tag_of(pid) in wanted]


def descendants(root: int) -> list[int]:
    """Processes below `root` in the process tree (children, their children, ...), zombies excluded. From each
    thread's list of children, from `root` down: a few reads where a scan reads every process's stat (200 on a quiet
    machine: 2 ms at every server's end)."""
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):  # a kernel without the lists
        return _descendants_by_scan(root)
    found: list[int] = []
    pending = [root]
    while pending:
        for child in _children(pending.pop()):
            info = _stat(child)
            if info is not None and info.state not in ("Z", "X"):
                found.append(child)
                pending.append(child)
    return found


def _descendants_by_scan(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid in _all_pids():
        info = _stat(pid)
        if info is not None and info.state not in ("Z", "X"):
            children.setdefault(info.ppid, []).append(pid)
    found: list[int] = []
    pending = list(children.get(root, []))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending += children.get(pid, [])
    return found


def kill_pids(pids: Iterable[int]) -> None:
    """SIGKILL each pid through a pidfd, so a pid the kernel has reused since it was found is never hit."""
    for pid in pids:
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(pidfd)


def kill_tagged(tags: Iterable[str]) -> None:
    kill_pids(tagged_pids(tags))


def kill_descendants(root: int | None = None) -> None:
    """Kill every process below `root` (default: this process)."""
    kill_pids(descendants(os.getpid() if root is None else root))


# ---- the server process itself -----------------------------------------------------------------------------------


@cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _prctl(option: int, value: int) -> bool:
    libc = _libc()
    if libc is None:
        return False
    if libc.prctl(option, value, 0, 0, 0) != 0:
        logger.debug("prctl(%d, %d) failed: %s", option, value, os.strerror(ctypes.get_errno()))
        return False
    return True


_subreaper = False


def forbid_inspection() -> None:
    """Make this process non-dumpable: other processes of the same user cannot read its memory, environment or
    file descriptors through /proc, nor attach a debugger."""
    _prctl(_PR_SET_DUMPABLE, 0)


def harden_server_process() -> None:
    """Make this process non-dumpable (`forbid_inspection`) and a child subreaper (see the module docstring), and
    raise its open-file limit."""
    global _subreaper
    forbid_inspection()
    _subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _raise_open_file_limit()


OPEN_FILES_WANTED = 4096
"""A running task holds its two task files open, beside its connections and pipes: with hundreds of tasks at once,
the common default soft limit of 1024 open files is too low."""


def _raise_open_file_limit() -> None:
    try:
        import resource
    except ImportError:  # not POSIX
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = OPEN_FILES_WANTED if hard == resource.RLIM_INFINITY else min(hard, OPEN_FILES_WANTED)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (OSError, ValueError):
        logger.debug("could not raise the open-file limit", exc_info=True)


def is_subreaper() -> bool:
    return _subreaper


def may_have_left_processes(tag: str) -> bool:
    """Whether processes of the command tagged `tag` may still run after it ended. As a subreaper this process
    adopted whatever outlived the command, so a look at its own children answers it; otherwise assume so."""
    if not _subreaper:
        return True
    return any(_tag_of(pid) == tag for pid in _children(os.getpid()))


def reap_adopted() -> None:
    """Collect exited processes that detached from a command and were re-parented to this subreaper.

    Only zombies that cannot be a child this process started itself are reaped: those carry a session id that is
    neither this process's nor their own (a child started by this process either inherits its session or leads a
    new one). Reaping anything else could take an exit status another waiter is expecting.
    """
    if not _subreaper:
        return
    own = os.getpid()
    own_session = os.getsid(0)
    for pid in _children(own):
        info = _stat(pid)
        if info is None or info.state != "Z" or info.session in (own_session, pid):
            continue
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _children(pid: int) -> list[int]:
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children", "rb") as file:
                found += [int(child) for child in file.read().split()]
        except (OSError, ValueError):
            continue
    return found


_RUN_OWN_MODULE = (
    "import runpy, sys; where, module = sys.argv[1], sys.argv[2]; where in sys.path or sys.path.insert(0, where); "
    "sys.argv = [module, *sys.argv[3:]]; runpy.run_module(module, run_name='__main__', alter_sys=True)"
)


def own_module_command(module: str, *args: str) -> list[str]:
    """`python -m module args` for a module of this package, safe to start in any folder: with `-m` Python puts the
    working directory first on the import path, so a project holding a folder named like this package would run
    its own code. `-P` keeps it off; the package is imported from where this process imported it."""
    package_parent = str(Path(__file__).resolve().parents[2])
    return [sys.executable, "-P", "-c", _RUN_OWN_MODULE, package_parent, module, *args]
