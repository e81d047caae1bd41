"""The running service: its lifecycle (catalog, model provider, sandbox, warm-up), turning one Task request into a
run (which tools, which model, which checks), the checks before each tool call, nesting, extensions, telemetry.

May use: render, team, tasks, agent, tools, sandbox, permissions, models, definitions, config, core.
"""
