"""Pages and scripts shipped as package data: the MCP App view and the dashboard."""
