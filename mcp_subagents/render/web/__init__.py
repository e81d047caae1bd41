"""Pages and scripts shipped as package data: the MCP App view and the dashboard."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def web_file(name: str) -> str:
    """A page or script of this folder, with the shared inert-text script (`inert.js`) put where it says
    `{{inert_js}}`."""
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    if "{{inert_js}}" in text:
        text = text.replace("{{inert_js}}", web_file("inert.js").strip())
    return text
