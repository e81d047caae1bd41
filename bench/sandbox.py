"""What the Bash sandbox costs per command: the same commands through the Bash tool, plain and sandboxed.

    python bench/sandbox.py            # 60 commands of each kind, a few seconds
    python bench/sandbox.py --smoke    # CI: the same code paths with tiny counts

Only this machine is involved; the network case fetches from an HTTP server on 127.0.0.2 through the sandbox's
proxy. Without bubblewrap the sandboxed figures are skipped with the reason.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_subagents.core.environment import scrubbed_environment  # noqa: E402
from mcp_subagents.sandbox import SandboxRuntime, parse_sandbox_config  # noqa: E402
from mcp_subagents.sandbox.platform import probe  # noqa: E402
from mcp_subagents.tools import ToolContext, builtin_tools  # noqa: E402

COMMAND = "echo hello"
ORIGIN = "127.0.0.2"


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def bash_runner(work: Path, home: Path, block: dict[str, Any] | None) -> tuple[Callable[[str], Awaitable[str]], Any]:
    env = scrubbed_environment(os.environ) | {"HOME": str(home)}
    runtime = None
    sandbox = None
    if block is not None:
        runtime = SandboxRuntime(parse_sandbox_config(block), state_dir=home / "state", home=home)
        sandbox = runtime.for_run(cwd=work, roots=(work,))
    ctx = ToolContext(cwd=work, allowed_roots=(work,), env=env, sandbox=sandbox)
    bash = builtin_tools()["Bash"]

    async def run(command: str) -> str:
        return await bash.run(ctx, bash.validate({"command": command}))

    def close() -> None:
        if sandbox is not None:
            sandbox.close()
        if runtime is not None:
            runtime.close()

    return run, close


async def per_command(run: Callable[[str], Awaitable[str]], command: str, count: int) -> float:
    await run(command)  # warm-up
    times: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        await run(command)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def make_tree(root: Path, width: int) -> int:
    """A project of width x 10 x 10 folders (a file in each) with a few nested repositories: what the sandbox
    searches for guarded names before and after every command. Returns the number of folders."""
    made = 0
    for first in range(width):
        for second in range(10):
            for third in range(10):
                folder = root / f"pkg{first}" / f"mod{second}" / f"part{third}"
                folder.mkdir(parents=True)
                (folder / "code.py").write_text("pass\n")
                made += 1
        (root / f"pkg{first}" / ".git").mkdir()
    return made


def scratch_folder() -> Path:
    """Outside /tmp, which the sandbox replaces with a private one."""
    return Path(tempfile.mkdtemp(prefix="mcp-subagents-bench-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))


async def main(count: int) -> None:
    folder = scratch_folder()
    home, work = folder / "home", folder / "home" / "project"
    work.mkdir(parents=True)
    server = ThreadingHTTPServer((ORIGIN, 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fetch = f"{sys.executable} -S -c \"import urllib.request as u; u.urlopen('http://{ORIGIN}:{server.server_address[1]}/').read()\""
    try:
        plain_run, plain_close = bash_runner(work, home, None)
        plain = await per_command(plain_run, COMMAND, count)
        plain_fetch = await per_command(plain_run, fetch, max(count // 4, 2))
        plain_close()
        print(f"Bash `{COMMAND}`, plain                       median {plain * 1000:7.1f} ms")
        availability = probe()
        if not availability.available:
            print(f"sandboxed figures skipped: {availability.reason}")
            return
        boxed_run, boxed_close = bash_runner(work, home, {})
        boxed = await per_command(boxed_run, COMMAND, count)
        boxed_close()
        print(
            f"Bash `{COMMAND}`, sandboxed (no network)        median {boxed * 1000:7.1f} ms   "
            f"ratio {boxed / plain:5.2f}   (+{(boxed - plain) * 1000:.1f} ms per command)"
        )
        big = home / "big-project"
        folders = make_tree(big, 20 if count > 10 else 4)
        big_run, big_close = bash_runner(big, home, {})
        in_big = await per_command(big_run, COMMAND, count)
        big_close()
        print(
            f"Bash `{COMMAND}`, sandboxed, {folders} folders    median {in_big * 1000:7.1f} ms   "
            f"ratio {in_big / plain:5.2f}   (the search for guarded names: +{(in_big - boxed) * 1000:.1f} ms)"
        )
        if availability.socat is None:
            print("network figures skipped: socat is not installed")
            return
        block = {"network": {"allowedDomains": [f"{ORIGIN}:{server.server_address[1]}"]}}
        net_run, net_close = bash_runner(work, home, block)
        networked = await per_command(net_run, COMMAND, count)
        net_fetch = await per_command(net_run, fetch, max(count // 4, 2))
        net_close()
        print(
            f"Bash `{COMMAND}`, sandboxed with the proxy      median {networked * 1000:7.1f} ms   "
            f"ratio {networked / plain:5.2f}"
        )
        print(
            f"one HTTP fetch (python), plain vs proxied       median {plain_fetch * 1000:7.1f} ms vs "
            f"{net_fetch * 1000:.1f} ms   ratio {net_fetch / plain_fetch:5.2f}"
        )
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny counts, for CI")
    options = parser.parse_args()
    anyio.run(main, 4 if options.smoke else 60)
