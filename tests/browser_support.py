"""Headless Chromium for page tests: Debian's `chromium`, driven by Playwright (never a browser download).

`.ci/run` installs the package; elsewhere the tests skip and say why. Set `MCP_SUBAGENTS_SCREENSHOTS=DIR` to write
the docs' screenshots into DIR (`docs/images`) while the tests run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.async_api import Page

CHROMIUM = os.environ.get("MCP_SUBAGENTS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_or_skip() -> str:
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; .ci/run installs it)")
    try:
        import playwright  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    return CHROMIUM


@asynccontextmanager
async def chromium_page(width: int = 1100, height: int = 700) -> AsyncGenerator[Page]:
    """A fresh page in headless Chromium."""
    executable = chromium_or_skip()
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            page = await browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            await browser.close()


def screenshot_path(name: str) -> Path | None:
    folder = os.environ.get("MCP_SUBAGENTS_SCREENSHOTS")
    if not folder:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder) / name
