"""The MCP protocol: the server and its three tools, tool calls in the foreground (waiting, question rounds),
schemas, elicitation, notifications, roots and their policy, who is calling, the App view and TaskList.

May use: runtime and everything below it (render among them); the `mcp` SDK.
"""
