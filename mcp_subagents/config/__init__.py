"""The server's configuration: its flags and environment (`Settings`), Claude Code's settings files as Claude
Code reads them (the hierarchy, merging, drop-ins), and project trust.

May use: core.
"""
