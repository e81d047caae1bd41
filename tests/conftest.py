from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.fakes.fake_llm import FakeLLM

# A server a test starts is a process of its own unless the test asks for the warm server (tests/cli/warm_support.py):
# one the machine's warm server served would outlive the test and share nothing of its tmp_path.
os.environ["MCP_SUBAGENTS_NO_WARM"] = "1"

# The suite draws the same examples every run, so a red run is the change's doing and can be repeated; the
# property tests' own settings build on this profile. MCP_SUBAGENTS_HYPOTHESIS=explore draws new examples instead
# (with MCP_SUBAGENTS_FUZZ_EXAMPLES for more of them), to look for cases no earlier run met.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", database=None)
settings.load_profile(os.environ.get("MCP_SUBAGENTS_HYPOTHESIS", "repeatable"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeLLM) -> Iterator[FakeLLM]:
    """The shared fake LLM server, with an empty script and no recorded requests."""
    fake_server.reset()
    yield fake_server
    fake_server.reset()


CHECKOUT = Path(__file__).resolve().parents[1]


def _untracked_files() -> set[str] | None:
    """Files in the checkout that git neither tracks nor ignores; None outside a git checkout."""
    try:
        listing = subprocess.run(
            ["git", "-C", str(CHECKOUT), "ls-files", "--others", "--exclude-standard"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(listing.stdout.splitlines())


@pytest.fixture(scope="session", autouse=True)
def checkout_stays_clean() -> Iterator[None]:
    """A subagent in a test must work in its tmp_path: a file it leaves in the checkout fails the run."""
    before = _untracked_files()
    yield
    after = _untracked_files()
    if before is not None and after is not None and (left := sorted(after - before)):
        pytest.fail(f"tests left files in the checkout {CHECKOUT}: {', '.join(left)}", pytrace=False)
