"""Freed memory goes back to the system when the server has no task left, and every `RELEASE_EVERY` finished tasks
on a server that is never idle."""

from __future__ import annotations

import platform

import pytest

from mcp_subagents.tasks.release import RELEASE_EVERY, MemoryRelease, malloc_trim


def test_memory_is_released_when_no_task_is_left_and_every_so_many_finished_tasks() -> None:
    releases: list[int] = []
    release = MemoryRelease(trim=lambda: releases.append(1))
    release.task_finished(still_running=0)
    assert len(releases) == 1
    for _ in range(RELEASE_EVERY - 1):
        release.task_finished(still_running=3)
    assert len(releases) == 1
    release.task_finished(still_running=3)
    assert len(releases) == 2


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_glibcs_malloc_trim_is_found_and_runs() -> None:
    trim = malloc_trim()
    assert trim is not None
    assert trim() in (0, 1)
