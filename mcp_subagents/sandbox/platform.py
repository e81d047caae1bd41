"""Whether the OS sandbox can run here, and why not when it cannot.

The answer is kept for the life of the process, keyed by what decides it: the bubblewrap and socat binaries the
settings and PATH lead to (by path and by file identity, a setuid bit included) and the kernel's switches for
unprivileged user namespaces. The warm server (`cli.warm_server`) probes before it forks, so a forked server whose
host leads to the same binaries runs no probe of its own. A probe that its owner stopped (a server shutting down
right after start-up) answers nothing, and is neither kept nor reported as a sandbox that cannot run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass

PROBE_TIMEOUT_SECONDS = 10.0
INSTALL_HINT = "install it with: sudo apt-get install bubblewrap socat (or your distribution's equivalent)"
_NAMESPACE_SWITCHES = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)
"""Files whose values allow or forbid the user namespaces bubblewrap creates (absent where a kernel has no such
switch)."""


@dataclass(frozen=True, slots=True)
class Availability:
    bwrap: str | None
    """The bubblewrap binary, when it works."""
    reason: str = ""
    """Why the sandbox cannot run, when it cannot."""
    socat: str | None = None
    """The socat binary, needed only for network access from inside the sandbox."""

    @property
    def available(self) -> bool:
        return self.bwrap is not None


class ProbeStopped(Exception):
    """The probe was stopped before it could answer (`ProbeStop`)."""


class ProbeStop:
    """Lets whoever waits for a probe end it: its process is killed and waited for (no bubblewrap outlives a
    server that closes right after start-up), and the probe raises `ProbeStopped` instead of answering."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            process = self._process
        if process is not None:
            process.kill()
            process.wait()

    def start(self, argv: list[str]) -> subprocess.Popen[bytes]:
        """Raises:
        ProbeStopped: the probe was stopped first.
        OSError: the program cannot be started.
        """
        with self._lock:
            if self._stopped:
                raise ProbeStopped
            self._process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            return self._process


_Identity = tuple[int, int, int, int, int, int] | None
_Key = tuple[str | None, _Identity, str | None, _Identity, tuple[str | None, ...]]

_answers: dict[_Key, Availability] = {}
_answers_lock = threading.Lock()


def probe(
    bwrap_path: str | None = None, socat_path: str | None = None, *, stop: ProbeStop | None = None
) -> Availability:
    """Find bubblewrap and check that it can create the namespaces the sandbox needs (it fails, for one, where
    unprivileged user namespaces are disabled or inside some containers). The answer found before is reused while
    the binaries and the kernel's switches are the same.

    Raises:
        ProbeStopped: `stop` was used before the probe had its answer.
    """
    if sys.platform == "darwin":
        return Availability(
            None, "macOS is not supported yet: the sandbox uses Linux bubblewrap, and Seatbelt support is not written"
        )
    if not sys.platform.startswith("linux"):
        return Availability(None, f"the sandbox needs Linux (bubblewrap); this is {sys.platform}")
    bwrap = bwrap_path or shutil.which("bwrap")
    socat = socat_path or shutil.which("socat")
    key: _Key = (bwrap, _identity(bwrap), socat, _identity(socat), _namespace_switches())
    with _answers_lock:
        known = _answers.get(key)
    if known is not None:
        return known
    found = _probe(bwrap, socat, stop or ProbeStop())
    if found is not None:
        with _answers_lock:
            _answers[key] = found
        return found
    return Availability(None, f"{bwrap} did not answer within {PROBE_TIMEOUT_SECONDS:g} s", socat)


def _probe(bwrap: str | None, socat: str | None, stop: ProbeStop) -> Availability | None:
    """The answer of a run of bubblewrap; None when it timed out (not an answer to keep)."""
    if bwrap is None:
        return Availability(None, f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}")
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net"]
    argv += ["--unshare-ipc", "--die-with-parent", "--new-session", "--", "/bin/sh", "-c", ":"]
    try:
        process = stop.start(argv)
    except OSError as exc:
        return Availability(None, f"{bwrap} cannot run: {exc}", socat)
    try:
        _, stderr = process.communicate(timeout=PROBE_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None
    if stop.stopped:
        raise ProbeStopped
    if process.returncode != 0:
        detail = stderr.decode(errors="replace").strip().splitlines()
        why = detail[-1] if detail else f"exit code {process.returncode}"
        return Availability(
            None,
            f"{bwrap} cannot create a sandbox here ({why}); unprivileged user namespaces may be disabled "
            "(sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces) or a container forbids them",
            socat,
        )
    return Availability(bwrap, "", socat)


def _identity(path: str | None) -> _Identity:
    """What changes when a binary is replaced, rebuilt or made setuid."""
    if path is None:
        return None
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_mode, status.st_uid)


def _namespace_switches() -> tuple[str | None, ...]:
    values: list[str | None] = []
    for path in _NAMESPACE_SWITCHES:
        try:
            with open(path, encoding="ascii") as switch:
                values.append(switch.read().strip())
        except OSError:
            values.append(None)
    return tuple(values)
