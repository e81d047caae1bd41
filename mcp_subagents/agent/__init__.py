"""One agent's run: the tool-use loop and compaction, the system prompt and the opening message (project
context, CLAUDE.md, skills, memory), worktrees, and the agent file's extension points that run beside it (hooks,
its own MCP servers).

May use: tools, sandbox, permissions, models, definitions, config, core. The loop itself imports no `mcp`, no
provider SDK, no permission or sandbox engine: what it needs comes in as arguments (the gate, the hooks, the model).
"""
