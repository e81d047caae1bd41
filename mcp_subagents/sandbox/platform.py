"""Whether the OS sandbox can run here, and why not when it cannot."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache

PROBE_TIMEOUT_SECONDS = 10.0
INSTALL_HINT = "install it with: sudo apt-get install bubblewrap socat (or your distribution's equivalent)"


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


@cache
def probe(bwrap_path: str | None = None, socat_path: str | None = None) -> Availability:
    """Find bubblewrap and check that it can create the namespaces the sandbox needs (it fails, for one, where
    unprivileged user namespaces are disabled or inside some containers)."""
    if sys.platform == "darwin":
        return Availability(
            None, "macOS is not supported yet: the sandbox uses Linux bubblewrap, and Seatbelt support is not written"
        )
    if not sys.platform.startswith("linux"):
        return Availability(None, f"the sandbox needs Linux (bubblewrap); this is {sys.platform}")
    bwrap = bwrap_path or shutil.which("bwrap")
    if bwrap is None:
        return Availability(None, f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}")
    socat = socat_path or shutil.which("socat")
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net"]
    argv += ["--unshare-ipc", "--die-with-parent", "--new-session", "--", "/bin/sh", "-c", ":"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(None, f"{bwrap} cannot run: {exc}", socat)
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        why = detail[-1] if detail else f"exit code {done.returncode}"
        return Availability(
            None,
            f"{bwrap} cannot create a sandbox here ({why}); unprivileged user namespaces may be disabled "
            "(sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces) or a container forbids them",
            socat,
        )
    return Availability(bwrap, "", socat)
