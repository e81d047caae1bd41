"""The house rules that import-linter does not check: no import cycle even through a function-local import, those
imports only where lazy loading is the point (listed here, with the reason), and no module or function that has
outgrown one screen of concern."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mcp_subagents

PACKAGE_DIR = Path(mcp_subagents.__file__).parent
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60

_COLD_START = "the task engine loads at the first Task or in the warm-up after the first listing, not at start-up"
_ONE_COMMAND = "each command loads only what it runs: `agents list` never imports the MCP server or the HTTP stack"
_WHEN_USED = "loaded only when a run or a setting asks for it"
_PRESCAN_CHILD = (
    "every command imports cli.prescan; only `serve` loads the catalog code (to name the project's cache file and "
    "count its agent files), and reading the agent files is the child's work"
)

# (importing module, imported module) -> why the import waits. The one place function-local imports are allowed;
# an entry nothing uses any more fails the test too, so the list stays true.
LAZY_IMPORTS: dict[tuple[str, str], str] = {
    ("agent.setup", "tools.web_search"): "WebSearch loads only for runs on the Anthropic provider",
    ("cli.commands", "cli.agents"): _ONE_COMMAND,
    ("cli.commands", "cli.dashboard"): _ONE_COMMAND,
    ("cli.commands", "cli.run"): _ONE_COMMAND,
    ("cli.commands", "cli.serve"): _ONE_COMMAND,
    ("cli.entry", "cli.commands"): "a stdio server answers a host's opening requests while the commands load",
    ("cli.entry", "serve.early_answers"): "a relay to the warm server starts on a few standard modules only",
    ("cli.commands", "cli.tasks"): _ONE_COMMAND,
    ("cli.tasks", "team.folder"): "the team's database (psycopg) only with --database-url",
    ("cli.prescan", "definitions"): _PRESCAN_CHILD,
    ("cli.prescan", "definitions.cache"): _PRESCAN_CHILD,
    ("cli.prescan", "definitions.sources"): _PRESCAN_CHILD,
    ("cli.prescan", "runtime.sources"): _PRESCAN_CHILD,
    ("cli.serve", "cli.dashboard"): "the dashboard's HTTP app loads only with --dashboard",
    ("cli.serve", "cli.terminal"): "the terminal view (and the loop's events it shows) only for a person at a terminal",
    ("cli.validate", "agent.hooks.config"): "hook checks load only for files that declare hooks",
    ("cli.validate", "agent.mcp_servers.config"): "server checks load only for files that declare servers",
    ("mcp.server", "mcp.foreground"): _COLD_START,
    ("mcp.server", "mcp.task_output"): _COLD_START,
    ("mcp.server", "mcp.task_answer"): "the view's answer tool loads at its first call",
    ("mcp.server", "mcp.task_list"): "the task list tool's view loads at its first call",
    ("mcp.server", "render.status"): _COLD_START,
    ("runtime.extensions", "agent.mcp_servers"): "the MCP client loads only when an agent has servers",
    ("runtime.extensions", "agent.mcp_servers.toolbox"): "the MCP client loads only when an agent has servers",
    ("runtime.extensions", "render"): "nested Task answers are rendered only when an agent launches one",
    ("runtime.service", "core.messages"): _COLD_START,
    ("runtime.service", "models.pricing"): "price files are read at the first priced run",
    ("runtime.service", "models.spread"): "spreading over several models loads only when configured",
    ("runtime.service", "team.replica"): "a team's replica (Postgres, DBOS) loads only with --database-url",
    ("runtime.service", "runtime.carry_on"): "taking tasks over from another replica only with --database-url",
    ("runtime.service", "render.status"): _COLD_START,
    ("runtime.service", "runtime.nesting"): _COLD_START,
    ("runtime.service", "runtime.policies"): "the permission rule engine loads at the first run",
    ("runtime.service", "runtime.runs"): _COLD_START,
    ("runtime.service", "runtime.telemetry"): "OpenTelemetry is an optional extra, loaded only when enabled",
    ("runtime.service", "sandbox"): "the sandbox loads only when it is turned on",
    ("runtime.service", "sandbox.wide"): "the sandbox loads only when it is turned on",
    ("runtime.service", "tasks.control"): "the control channel opens only for a server with a state folder",
    ("runtime.service", "runtime.control"): "the control channel opens only for a server with a state folder",
    ("runtime.service", "runtime.answers"): "answering loads with the first question someone answers",
    ("runtime.service", "permissions.session_rules"): "the permission rule engine loads at the first run",
    ("runtime.service", "tasks.manager"): _COLD_START,
    ("runtime.service", "tasks.outcome"): _COLD_START,
    ("runtime.service", "tasks.record"): _COLD_START,
    ("runtime.service", "tasks.transcripts"): _COLD_START,
    ("runtime.service", "tools.base"): _COLD_START,
    ("runtime.sources", "permissions.rules"): "the rule engine loads only when a flag names a settings file",
    ("serve.stdio_streams", "serve.jsonrpc_guard"): "the line guard loads only for stdio serving",
    ("serve.transports", "serve.jsonrpc_guard"): "the line guard loads only for stdio serving",
    ("serve.transports", "serve.oauth"): "OAuth loads only for HTTP serving with an issuer",
    ("serve.transports", "serve.stdio_streams"): "stdio streams load only for stdio serving",
    ("tools", "tools.files"): _WHEN_USED + ": a tool module loads when a run's tool list needs it",
    ("tools", "tools.glob"): _WHEN_USED + ": a tool module loads when a run's tool list needs it",
    ("tools", "tools.grep"): _WHEN_USED + ": a tool module loads when a run's tool list needs it",
    ("tools", "tools.shell"): _WHEN_USED + ": a tool module loads when a run's tool list needs it",
    ("tools", "tools.todo"): _WHEN_USED + ": a tool module loads when a run's tool list needs it",
    ("tools", "tools.web"): _WHEN_USED + ": a tool module loads when a run's tool list needs it",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _imported_modules(path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """Our modules an import statement loads, named relative to the package."""
    if isinstance(node, ast.Import):
        candidates = [alias.name.removeprefix("mcp_subagents.") for alias in node.names]
        candidates = [c for c, a in zip(candidates, node.names, strict=True) if a.name.startswith("mcp_subagents")]
    else:
        if node.level == 0:
            if not (node.module or "").startswith("mcp_subagents"):
                return
            base = (node.module or "").removeprefix("mcp_subagents").removeprefix(".")
        else:
            package = (
                _module_name(path).split(".") if path.name == "__init__.py" else _module_name(path).split(".")[:-1]
            )
            package = [p for p in package if p]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([node.module] if node.module else [])])
        candidates = [f"{base}.{alias.name}".lstrip(".") for alias in node.names]
        candidates = [c if c in MODULES else base for c in candidates]
    for candidate in candidates:
        while candidate and candidate not in MODULES:
            candidate = candidate.rpartition(".")[0]
        yield candidate


def _type_checking_only(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                skipped.update(id(inner) for inner in ast.walk(statement))
    return skipped


def _imports(local_only: bool) -> Iterator[tuple[str, str, int]]:
    """(importer, imported, line) for every runtime import of our own modules, or only the function-local ones."""
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        scopes: list[ast.AST] = (
            [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
            if local_only
            else [tree]
        )
        seen: set[int] = set()
        for scope in scopes:
            for node in ast.walk(scope):
                if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped | seen:
                    seen.add(id(node))
                    for target in _imported_modules(path, node):
                        if target != name:
                            yield name, target, node.lineno


def _import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for importer, imported, _ in _imports(local_only=False):
        graph[importer].add(imported)
    return graph


def _cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for following in sorted(graph[node]):
            if state.get(following) == 1:
                return [*path[path.index(following) :], following]
            if following not in state and (found := visit(following)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_no_import_cycle_even_through_function_local_imports() -> None:
    cycle = _cycle_in(_import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_function_local_imports_are_the_listed_lazy_loads() -> None:
    found: dict[tuple[str, str], list[str]] = {}
    for importer, imported, line in _imports(local_only=True):
        found.setdefault((importer, imported), []).append(f"{MODULES[importer].relative_to(PACKAGE_DIR)}:{line}")
    unlisted = {pair: where for pair, where in found.items() if pair not in LAZY_IMPORTS}
    stale = sorted(pair for pair in LAZY_IMPORTS if pair not in found)
    assert not unlisted, f"function-local imports not in LAZY_IMPORTS (import at the top, or list why): {unlisted}"
    assert not stale, f"LAZY_IMPORTS entries no code uses any more: {stale}"


def test_the_checks_can_fail() -> None:
    """A cycle hidden in a function is found, and a relative import inside a function names the module it loads."""
    assert _cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    statement = ast.parse("from ..tasks import manager").body[0]
    assert isinstance(statement, ast.ImportFrom)
    assert list(_imported_modules(MODULES["runtime.service"], statement)) == ["tasks.manager"]
    assert ("runtime.service", "tasks.manager") in {(a, b) for a, b, _ in _imports(local_only=True)}


def test_no_module_over_600_lines_and_no_function_over_60() -> None:
    long_modules: list[str] = []
    long_functions: list[str] = []
    for path in MODULES.values():
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(PACKAGE_DIR)
        if (lines := len(source.splitlines())) > MAX_MODULE_LINES:
            long_modules.append(f"{where}: {lines}")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if (length := (node.end_lineno or node.lineno) - start + 1) > MAX_FUNCTION_LINES:
                    long_functions.append(f"{where}:{node.lineno} {node.name}: {length}")
    assert not long_modules, long_modules
    assert not long_functions, long_functions
