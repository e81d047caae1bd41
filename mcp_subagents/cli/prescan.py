"""The first start in a state directory: agent files are parsed by a second process while the server imports.

Every start after the first reads what the agent files said from the state directory's cache (`definitions.cache`).
The first start had to parse every file itself, on the one core that was also importing the server: with thousands
of files that made it a third slower. So when the project has no cache yet, `start_prescan` runs
`python -m mcp_subagents.cli.prescan` with the server's own arguments; it scans the same sources the same way,
which writes the cache, and exits. The server's first scan waits for it (bounded) and then reads the cache. Nothing
depends on it but speed: if it fails or is late, the server parses the files itself, as before.

It saves time only on a core the server does not need, and only when there is much to parse. Its own start (a
Python process and its imports) costs about 0.1 s of CPU, and parsing beside the server costs more than parsing in
it (the cache is written, then read back); on a machine whose cores are busy that CPU is taken from the server and
everything else, and a few dozen files parse in the server in a millisecond or two. So it runs only while the load
average leaves a core free, for `PRESCAN_FILES` agent files or more.
"""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from ..config.settings import Settings
from ..core.processes import own_module_command
from .arguments import settings_for_command_line

logger = logging.getLogger(__name__)

WAIT_SECONDS = 20.0
"""How long the first scan waits for the prescan before parsing the files itself."""
PRESCAN_FILES = 500
"""Agent files from which a prescan is started: parsing them takes the server about 20 ms of its start-up (a file
takes 40-50 us), and the prescan's own start costs five times that in CPU."""


@dataclass(slots=True)
class CatalogPrescan:
    """A running prescan."""

    process: subprocess.Popen[bytes]

    def wait(self) -> None:
        """Until the prescan has exited (or is stopped, after `WAIT_SECONDS`); what it wrote is then in the cache."""
        try:
            code = self.process.wait(timeout=WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            logger.info("the agent files are parsed here: the prescan did not finish in %.0f s", WAIT_SECONDS)
            self.stop()
            return
        if code != 0:
            logger.debug("the agent-file prescan exited with %s; the files are parsed here", code)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def start_prescan(settings: Settings, argv: Sequence[str]) -> CatalogPrescan | None:
    """Start parsing the agent files in another process when the state directory has no cache of them yet, they are
    many and a core is free; `argv` is the server's command line (after the program name), so both scan the very
    same sources."""
    if not a_core_is_free():
        return None
    # The server imports these right after (for its catalog): importing them here only comes first.
    from ..definitions.cache import CACHE_FILE, cache_path
    from ..definitions.sources import has_many_agent_files
    from ..runtime.sources import definition_sources

    sources = definition_sources(settings)
    if cache_path(settings.state_dir / CACHE_FILE, sources.cache_identity()).exists():
        return None
    if not has_many_agent_files(sources, PRESCAN_FILES):
        return None
    try:
        process = subprocess.Popen(
            own_module_command("mcp_subagents.cli.prescan", *argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # stdout is the protocol
            stderr=subprocess.DEVNULL,  # the server logs the files' warnings itself when it reads the cache
            close_fds=True,
        )
    except OSError as exc:
        logger.debug("no agent-file prescan: %s", exc)
        return None
    return CatalogPrescan(process)


def a_core_is_free() -> bool:
    """Whether the load average leaves a core idle beside the one the server takes (yes where it cannot be read)."""
    try:
        cores = len(os.sched_getaffinity(0))
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return True
    return load < cores - 1


def _prescan(argv: Sequence[str]) -> int:
    # The server imports this module only to start the child; the loader is the child's work.
    from ..definitions import CatalogLoader
    from ..definitions.cache import CACHE_FILE
    from ..runtime.sources import definition_sources

    settings = settings_for_command_line(argv)
    if settings is None:
        return 2
    CatalogLoader(definition_sources(settings), cache_file=settings.state_dir / CACHE_FILE).load()
    return 0


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    gc.disable()  # a process that lives a fraction of a second: the collector's passes would find nothing to free
    raise SystemExit(_prescan(sys.argv[1:]))
