"""The warm server: one process per person and code version that has already imported what a server needs (the MCP
SDK, the provider SDKs, the runtime: two to four seconds of CPU), and forks a fresh server for each host that starts
`mcp-subagents` (`cli.warm_relay` hands it the host's stdin, stdout and stderr with its command line, environment
and folder).

Each forked server is the process a cold start would have been, only without the imports: it takes the host's
descriptors, environment, folder and umask before it reads a byte, runs the same code, and ends as that process
would. No state is shared between them, and nothing lives here that a kill could lose: killed, this process only
makes the next start cold again (which starts a new one). It exits after `MCP_SUBAGENTS_WARM_IDLE` seconds (30
minutes) with no server running and no connection.

Run by the relay as `python -P -m mcp_subagents.cli.warm_server FOLDER KEY`, detached, in `/`, with a short
environment (the host's own arrives with each connection).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import gc
import importlib
import os
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import TextIO

from ..core.messages import UserMessage
from ..core.sockets import receive_exactly
from ..mcp.schemas import host_schema, task_answer_schema, task_output_schema, task_stop_schema
from ..models.tls import verify_context
from ..runtime.nesting import NestedTaskInput
from ..runtime.request import TaskRequest
from ..sandbox.platform import probe
from ..tasks.outcome import TaskOutcome, encode_outcome
from ..tasks.transcripts import encode_message
from ..tools import builtin_tools
from ..tools.base import input_schema
from .arguments import parser_for
from .entry import serve_here
from .warm_wire import (
    DEFAULT_IDLE_S,
    HELLO_LENGTH_SIZE,
    HELLO_LIMIT,
    IDLE_VARIABLE,
    Hello,
    MessageReader,
    WarmAddress,
    WireError,
    code_key,
    peer_uid,
    send_message,
    warm_address,
)

PRELOADED = (
    "mcp_subagents.cli.commands",
    "mcp_subagents.cli.serve",
    "mcp_subagents.runtime.service",
    "mcp_subagents.runtime.warmup",
    "mcp_subagents.tasks.manager",
    "mcp_subagents.mcp.foreground",
    "mcp_subagents.models.pricing",
    "mcp_subagents.models.anthropic",
    "mcp_subagents.models.openai",
    "mcp_subagents.runtime.runs",
    "mcp_subagents.agent.setup",
    "mcp_subagents.runtime.extensions",
    "mcp_subagents.tools.web_search",
    "mcp_subagents.sandbox.gate",
    "mcp_subagents.permissions.gate",
    "mcp_subagents.tools.shell",
    "mcp_subagents.tools.files",
    "mcp_subagents.tools.glob",
    "mcp_subagents.tools.grep",
    "mcp_subagents.tools.todo",
    "mcp_subagents.tools.web",
    "html.parser",
    "mcp_subagents.agent.project_context",
    "anthropic",
    "openai",
    "mcp.client.stdio",
    "mcp.client.session",
    "yaml",
    "pathspec",
    "httpcore2",
    "mcp_subagents.serve.stdio_streams",
    "mcp_subagents.serve.jsonrpc_guard",
    "mcp_subagents.tasks.control",
    "mcp_subagents.runtime.control",
    "anyio._core._signals",
    "resource",
)
"""What a server imports by its first Task finished (a module that cannot be imported here is skipped), and what
a stdio server imports while it starts (its streams, its control channel, SIGTERM's handler)."""
START_DELAY_S = 1.0
"""The relay that starts this process serves its own host cold meanwhile: its start-up goes first."""
_HOST_DESCRIPTORS = 3
_HELLO_TIMEOUT_S = 5.0
_REAP_INTERVAL_S = 5.0
_THREAD_GRACE_S = 3.0


def main(argv: Sequence[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if len(arguments) != 2:
        raise SystemExit("usage: python -P -m mcp_subagents.cli.warm_server FOLDER KEY")
    address = WarmAddress(arguments[0], arguments[1])
    expected = warm_address(os.environ)
    if expected is None or expected.folder != address.folder:
        raise SystemExit(0)  # not the person's own folder as this environment names it: listen nowhere else
    if expected.key != address.key:
        # The relay found other code than this process imports (a `python -m` in a checkout puts the folder first
        # on its path; this process runs in `/`), or the files changed since it looked: the relays that ask for
        # this key would be served code they did not name.
        raise SystemExit(0)
    lock = _exclusive_lock(address.lock_path)
    if lock is None:
        raise SystemExit(0)  # another warm server for this code is already starting or serving
    log = _private_log(address.log_path)
    try:
        time.sleep(START_DELAY_S)
        _preload(log)
        if code_key() != address.key:
            print("not serving: the code changed while it was imported", file=log, flush=True)
            raise SystemExit(0)
        WarmServer(address, lock, log, idle_s=_idle_seconds()).serve()
    except Exception:  # its stderr is /dev/null: what ended it goes to its log
        traceback.print_exc(file=log)
        log.flush()
        raise SystemExit(1) from None


def _exclusive_lock(path: str) -> int | None:
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


def _private_log(path: str) -> TextIO:
    """This server's own log (what it preloaded, what it refused), readable by its owner only."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    return open(descriptor, "w", encoding="utf-8", errors="backslashreplace")


def _idle_seconds() -> float:
    try:
        return max(0.1, float(os.environ.get(IDLE_VARIABLE, DEFAULT_IDLE_S)))
    except ValueError:
        return DEFAULT_IDLE_S


def _preload(log: TextIO) -> None:
    gc.disable()
    started = time.process_time()
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            print(f"not preloaded: {name}: {exc}", file=log, flush=True)
    _build_process_caches()
    gc.collect()
    gc.freeze()  # what is imported stays: the forked servers share its pages instead of each copying them
    gc.enable()
    print(f"preloaded in {time.process_time() - started:.2f} s of CPU", file=log, flush=True)


def _build_process_caches() -> None:
    """What a server builds once per process from nothing of a host's (the built-in tools' input schemas, the nested
    Task's, the transcript's and outcome's encoders, the MCP tools' schemas, the sandbox probe's answer, the
    `serve` command's parser, the providers' TLS context and lazily built types): built here, every forked server
    has it."""
    for tool in builtin_tools().values():
        tool.definition()
    input_schema(NestedTaskInput)
    encode_message(UserMessage(content=""))
    encode_outcome(TaskOutcome(state="completed"))
    for schema in (task_output_schema, task_stop_schema, task_answer_schema, lambda: host_schema(TaskRequest)):
        schema()  # the tools' input schemas, as tools/list shows them (the Task's agent names are added to a copy)
    probe()  # bubblewrap's answer, kept for the binaries this PATH finds (`sandbox.platform`)
    parser_for(["serve"])  # the command line hosts start: parsing it takes no environment (`settings_from` does)
    _prepare_providers()


def _prepare_providers() -> None:
    """What building a provider's client and its first request cost once per process: the TLS context (the CA
    bundle, read again in a fork only when it or `SSL_CERT_*` differ) and each SDK's lazily built types (an offline
    rehearsal, with a key that is no one's)."""
    verify_context()
    for name, adapter in (("anthropic", "AnthropicModel"), ("openai", "OpenAIModel")):
        module = sys.modules.get(f"mcp_subagents.models.{name}")
        if module is not None:  # preloaded
            getattr(module, adapter)(api_key="rehearsal").rehearse()


@dataclass(slots=True)
class WarmServer:
    """Listens on the address's socket, forks a server for each relay of the same user, reaps what ended."""

    address: WarmAddress
    lock: int
    log: TextIO
    idle_s: float
    children: set[int] = field(default_factory=lambda: set[int]())
    _last_activity: float = field(default_factory=time.monotonic)

    def serve(self) -> None:
        listener = _listen(self.address.socket_path)
        identity = _file_identity(self.address.socket_path)
        wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        stop = threading.Event()
        signal.signal(signal.SIGCHLD, _wake_only)
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        print(f"serving on {self.address.socket_path}", file=self.log, flush=True)
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(wake_read, selectors.EVENT_READ)
            while (
                not stop.is_set()
                and not self._idle_for_too_long()
                and _file_identity(self.address.socket_path) == identity
            ):
                for key, _events in selector.select(timeout=min(_REAP_INTERVAL_S, self.idle_s)):
                    if key.fileobj is listener:
                        self._accept(listener, closing=(wake_read, wake_write))
                    else:
                        _drain(wake_read)
                self._reap()
        with contextlib.suppress(OSError):
            if _file_identity(self.address.socket_path) == identity:
                os.unlink(self.address.socket_path)
        print("stopped", file=self.log, flush=True)

    def _idle_for_too_long(self) -> bool:
        if self.children:
            self._last_activity = time.monotonic()
            return False
        return time.monotonic() - self._last_activity > self.idle_s

    def _reap(self) -> None:
        for pid in list(self.children):
            with contextlib.suppress(ChildProcessError):
                ended, _status = os.waitpid(pid, os.WNOHANG)
                if ended == 0:
                    continue
            self.children.discard(pid)

    def _accept(self, listener: socket.socket, *, closing: tuple[int, int]) -> None:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        self._last_activity = time.monotonic()
        with connection:
            if peer_uid(connection) != os.getuid():
                print("refused a connection from another user", file=self.log, flush=True)
                return
            connection.settimeout(_HELLO_TIMEOUT_S)
            try:
                hello, descriptors = receive_hello(connection, _HOST_DESCRIPTORS)
            except (WireError, OSError) as exc:
                print(f"refused a connection: {exc}", file=self.log, flush=True)
                return
            try:
                if threading.active_count() > 1:  # a fork would copy a lock some thread holds: let it start cold
                    print("refused a connection: a thread is running here", file=self.log, flush=True)
                    return
                pid = os.fork()
                if pid == 0:
                    self._become_server(hello, descriptors, connection, listener, closing)
                self.children.add(pid)
                print(f"forked server {pid} for a host in {hello.cwd!r}", file=self.log, flush=True)
            finally:
                for descriptor in descriptors:
                    os.close(descriptor)

    def _become_server(
        self,
        hello: Hello,
        descriptors: list[int],
        connection: socket.socket,
        listener: socket.socket,
        closing: tuple[int, int],
    ) -> None:
        """In the forked child: become the process the relay stands for, then run as a cold start would."""
        status = 1
        try:
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGCHLD, signal.SIGTERM):
                signal.signal(signum, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            listener.close()
            for descriptor in (*closing, self.lock):
                os.close(descriptor)
            self.log.close()
            os.setsid()
            _take_over(hello, descriptors)
            connection.settimeout(None)
            send_message(connection, {"started": os.getpid()})
            status = _run_for_relay(connection, hello.argv[1:])
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # the child must end here whatever happened, never return to the loop
            with contextlib.suppress(Exception):
                traceback.print_exc()
        os._exit(status)


def _wake_only(_signum: int, _frame: FrameType | None) -> None:
    """SIGCHLD only wakes the loop (through the wake-up descriptor), which then reaps."""


def _listen(path: str) -> socket.socket:
    """The socket at `path`, readable and writable by its owner only. An old one is removed: the lock says that
    whatever made it is gone."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(previous)
    listener.listen(64)
    return listener


def _file_identity(path: str) -> tuple[int, int] | None:
    """The device and inode of the socket file: still the same means still the one this server made (someone may
    have removed the folder, or another server taken the name)."""
    try:
        status = os.lstat(path)
    except OSError:
        return None
    return (status.st_dev, status.st_ino)


def _drain(descriptor: int) -> None:
    with contextlib.suppress(BlockingIOError, InterruptedError):
        while os.read(descriptor, 512):
            pass


def receive_hello(connection: socket.socket, descriptor_count: int) -> tuple[Hello, list[int]]:
    """The hello and exactly `descriptor_count` descriptors; a short or oversized message is a WireError (and the
    descriptors that came with it are closed)."""
    header, descriptors, _flags, _address = socket.recv_fds(connection, HELLO_LENGTH_SIZE, descriptor_count + 1)
    try:
        if len(descriptors) != descriptor_count or len(header) != HELLO_LENGTH_SIZE:
            raise WireError(f"expected {descriptor_count} descriptors with the hello, got {len(descriptors)}")
        length = int.from_bytes(header, "big")
        if length > HELLO_LIMIT:
            raise WireError(f"a hello of {length} bytes is over the limit")
        try:
            body = receive_exactly(connection, length)
        except EOFError:
            raise WireError("the connection closed in the middle of the hello") from None
        return Hello.decode(body), descriptors
    except (WireError, OSError):
        for descriptor in descriptors:
            os.close(descriptor)
        raise


def _take_over(hello: Hello, descriptors: list[int]) -> None:
    """The host's stdin, stdout and stderr, its environment, folder and umask become this process's."""
    for target, descriptor in enumerate(descriptors):
        os.dup2(descriptor, target)
    for descriptor in descriptors:
        if descriptor > 2:
            os.close(descriptor)
    os.environ.clear()
    os.environ.update(hello.environ)
    os.umask(hello.umask)
    sys.argv = list(hello.argv)
    try:
        os.chdir(hello.cwd)
    except OSError as exc:
        print(f"mcp-subagents: cannot enter the folder {hello.cwd!r}: {exc.strerror}", file=sys.stderr)
        raise SystemExit(1) from None
    _reread_library_environment()


def _reread_library_environment() -> None:
    """What the provider SDKs read from the environment when they were imported (their log levels)."""
    for module_name, function_name in (
        ("anthropic._utils._logs", "setup_logging"),
        ("openai._utils._logs", "setup_logging"),
    ):
        module = sys.modules.get(module_name)
        setup: Callable[[], object] | None = getattr(module, function_name, None) if module else None
        if setup is not None:
            with contextlib.suppress(Exception):
                setup()


def _run_for_relay(connection: socket.socket, arguments: list[str]) -> int:
    """Serve as the relay's process would, with its signals forwarded here and its end ending this server; the
    exit status goes back to it."""
    ending = threading.Event()
    threading.Thread(target=_follow_relay, args=(connection, ending), name="warm-relay", daemon=True).start()
    status = 0
    try:
        serve_here(arguments)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        status = 130
    _finish_as_interpreter_would()
    ending.set()
    with contextlib.suppress(OSError):
        send_message(connection, {"exit": status})
    return status


def _finish_as_interpreter_would() -> None:
    """What the end of a cold start's interpreter does: wait for its non-daemon threads (a bounded while: a worker
    thread stuck in a child process the shutdown killed must not keep the host waiting), run its exit functions,
    flush. (The forked server then leaves with `os._exit`, so nothing of the warm server's own runs.)"""
    deadline = time.monotonic() + _THREAD_GRACE_S
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
    atexit._run_exitfuncs()  # pyright: ignore[reportPrivateUsage]  # the interpreter's own exit path
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _follow_relay(connection: socket.socket, ending: threading.Event) -> None:
    """Signals the relay received come here; the relay's end (a host that killed it) stops this server."""
    reader = MessageReader(connection)
    while (message := reader.next()) is not None:
        signum = message.get("signal")
        if signum is not None and signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            os.kill(os.getpid(), signum)
    if not ending.is_set():
        with contextlib.suppress(OSError):
            os.kill(os.getpid(), signal.SIGTERM)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        try:
            main()
        except OSError as exc:
            if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                raise
