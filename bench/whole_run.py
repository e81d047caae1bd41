"""Run a command and measure it whole: the wall time until it exits, and the CPU time of it and of every process it
started, those still running when it exits included (this process adopts them as a subreaper and waits for them).

    python bench/whole_run.py RESULT_JSON COMMAND...

The command gets this process's stdin, stdout, stderr and environment. RESULT_JSON receives `returncode`, `wall_s`
(spawn to exit), `cpu_s` (user + system of the command and all its descendants), `linger_s` (how long the last
process it left behind ran on after it exited) and `killed` (descendants still running after LINGER_LIMIT_S, which
were killed). Standard library only; this wrapper's own CPU is in no figure (RUSAGE_CHILDREN leaves it out).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path
from types import FrameType

PR_SET_CHILD_SUBREAPER = 36
LINGER_LIMIT_S = 30


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process instead of init, so their CPU time reaches it too."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def children() -> list[int]:
    found: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        found += [int(pid) for pid in (task / "children").read_text().split()]
    return found


def reap_the_rest() -> int:
    """Wait for every adopted descendant; after LINGER_LIMIT_S kill those left. Returns how many were killed."""
    killed: list[int] = []

    def kill_the_rest(signum: int, frame: FrameType | None) -> None:
        for pid in children():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    signal.signal(signal.SIGALRM, kill_the_rest)
    signal.alarm(LINGER_LIMIT_S)
    while True:
        try:
            os.wait4(-1, 0)
        except ChildProcessError:
            break
    signal.alarm(0)
    return len(killed)


def main(result: Path, command: list[str]) -> int:
    # A process group of its own, so the caller can kill all of it; not a session of its own: with the kernel's
    # autogroup scheduling a new session gets its own share of the CPU, and load started beside it would not compete.
    os.setpgid(0, 0)
    become_subreaper()
    started = time.perf_counter()
    pid = os.posix_spawnp(command[0], command, os.environ)
    _, status, _ = os.wait4(pid, 0)
    exited = time.perf_counter()
    killed = reap_the_rest()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    returncode = os.waitstatus_to_exitcode(status)
    measured = {
        "returncode": returncode,
        "wall_s": exited - started,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "linger_s": time.perf_counter() - exited,
        "killed": killed,
    }
    result.write_text(json.dumps(measured), encoding="utf-8")
    return returncode


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
