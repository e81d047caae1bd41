"""Getting bytes in and out: stdio streams, the HTTP transports (SSE, Streamable HTTP) and ASGI serving, the
JSON-RPC guard, HTTP security, tokens and OAuth, and the dashboard with its pages.

May use: mcp and everything below it.
"""
