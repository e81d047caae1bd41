"""Parsed agent files kept in the state directory: a restart reads them instead of parsing, gives the very same
catalog, parses what changed, and ignores a cache it cannot trust."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.definitions import AgentDefinition, CatalogLoader, DefinitionSources
from mcp_subagents.definitions import sources as sources_module
from mcp_subagents.definitions.cache import CACHE_FILE

from .test_corpus import PLUGINS
from .test_sources import agent, write


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files parsed from now on."""
    calls: list[Path] = []
    real = sources_module.parse_definition

    def counting(text: str, **kwargs: Any) -> AgentDefinition:
        calls.append(kwargs["path"])
        return real(text, **kwargs)

    monkeypatch.setattr(sources_module, "parse_definition", counting)
    return calls


def loader(sources: DefinitionSources, state: Path) -> CatalogLoader:
    """A loader as a new server process has it: nothing in memory, the state directory on disk."""
    return CatalogLoader(sources, cache_file=state / CACHE_FILE)


@pytest.mark.skipif(not PLUGINS.is_dir(), reason="agent corpus not found")
def test_a_restart_lists_real_agent_files_without_parsing_and_parses_one_when_it_runs(
    tmp_path: Path, parses: list[Path]
) -> None:
    sources = DefinitionSources(plugin_dirs=(PLUGINS,))
    first = loader(sources, tmp_path).load()
    parsed_at_first = len(parses)
    again = loader(sources, tmp_path).load()
    assert parsed_at_first >= 200
    assert len(parses) == parsed_at_first
    assert again.listing() == first.listing()
    assert again.names() == first.names() and again.errors == first.errors

    name = again.names()[-1]
    assert again.agents[name] == first.agents[name]
    assert len(parses) == parsed_at_first + 1
    assert dict(again.agents) == dict(first.agents)  # every definition, parsed on demand, is the one parsed at first


def test_only_changed_and_new_files_are_parsed_after_a_restart(tmp_path: Path, parses: list[Path]) -> None:
    folder = tmp_path / "agents"
    kept, edited = agent(folder, "kept"), agent(folder, "edited", "before")
    sources = DefinitionSources(user_dir=folder)
    loader(sources, tmp_path / "state").load()
    agent(folder, "edited", "after!")
    stat_ = edited.stat()
    os.utime(edited, ns=(stat_.st_atime_ns, stat_.st_mtime_ns + 1_000_000))
    added = agent(folder, "added")
    parses.clear()
    catalog = loader(sources, tmp_path / "state").load()
    assert sorted(parses) == sorted([edited, added])
    assert catalog.agents["edited"].description == "after!"
    assert set(catalog.names()) == {"kept", "edited", "added"}
    assert kept not in parses


def test_broken_files_are_reported_again_from_the_cache(tmp_path: Path, parses: list[Path]) -> None:
    write(tmp_path / "agents" / "broken.md", "---\nname: broken\n---\n")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    first = loader(sources, tmp_path / "state").load()
    parses.clear()
    again = loader(sources, tmp_path / "state").load()
    assert parses == []
    assert again.errors == first.errors and len(again.errors) == 1


def test_warnings_are_logged_again_by_each_new_process(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path / "agents" / "a.md", "---\nname: a\ndescription: d\ncolor: magenta\n---\nBody.\n")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    with caplog.at_level(logging.WARNING):
        loader(sources, tmp_path / "state").load()
        warm = loader(sources, tmp_path / "state")
        warm.load()
        warm.load()  # the same process: not again
    warnings = [record.getMessage() for record in caplog.records if "invalid color 'magenta'" in record.getMessage()]
    assert len(warnings) == 2


def test_a_definition_parsed_on_demand_is_not_warned_about_twice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path / "agents" / "a.md", "---\nname: a\ndescription: d\ncolor: magenta\n---\nBody.\n")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    loader(sources, tmp_path / "state").load()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        warm = loader(sources, tmp_path / "state")
        definition = warm.load().agents["a"]
        assert warm.load().agents["a"] is definition  # later scans reuse the parsed definition
    assert definition.prompt == "Body." and definition.color is None
    assert len([r for r in caplog.records if "magenta" in r.getMessage()]) == 1


def test_a_cached_agent_whose_file_broke_meanwhile_is_not_run(tmp_path: Path) -> None:
    path = agent(tmp_path / "agents", "a")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    loader(sources, tmp_path / "state").load()
    catalog = loader(sources, tmp_path / "state").load()
    path.write_text("---\nname: a\n---\n", encoding="utf-8")  # no description any more
    assert catalog.get("a") is None
    assert "a" in catalog.names()  # until the next scan, which reports the error
    rescanned = loader(sources, tmp_path / "state").load()
    assert rescanned.names() == () and len(rescanned.errors) == 1


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[]", b'{"format": 1, "parser": "other code", "entries": []}', b"\xff\xfe"],
    ids=["broken", "not-an-object", "other-parser", "not-utf8"],
)
def test_a_cache_that_cannot_be_trusted_is_ignored_and_replaced(
    tmp_path: Path, parses: list[Path], content: bytes
) -> None:
    agent(tmp_path / "agents", "a", "the real one")
    cache = tmp_path / "state" / CACHE_FILE
    write(cache, content)
    catalog = loader(DefinitionSources(user_dir=tmp_path / "agents"), tmp_path / "state").load()
    assert catalog.agents["a"].description == "the real one"
    assert len(parses) == 1
    assert json.loads(cache.read_text(encoding="utf-8"))["entries"][0]["path"].endswith("a.md")


def test_a_cache_entry_for_a_file_that_changed_is_not_used(tmp_path: Path) -> None:
    """A cache entry is only ever taken for a file whose size and mtime still match."""
    path = agent(tmp_path / "agents", "a", "original")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    loader(sources, tmp_path / "state").load()
    cache = tmp_path / "state" / CACHE_FILE
    document = json.loads(cache.read_text(encoding="utf-8"))
    document["entries"][0]["outcome"]["description"] = "planted"
    cache.write_text(json.dumps(document), encoding="utf-8")
    assert loader(sources, tmp_path / "state").load().listing()[0][1] == "planted"  # an unchanged file: trusted
    agent(tmp_path / "agents", "a", "original, edited")
    stat_ = path.stat()
    os.utime(path, ns=(stat_.st_atime_ns, stat_.st_mtime_ns + 1_000_000))
    assert loader(sources, tmp_path / "state").load().agents["a"].description == "original, edited"


def test_the_cache_is_private_to_the_user(tmp_path: Path) -> None:
    agent(tmp_path / "agents", "a")
    loader(DefinitionSources(user_dir=tmp_path / "agents"), tmp_path / "state").load()
    assert stat.S_IMODE((tmp_path / "state" / CACHE_FILE).stat().st_mode) == 0o600


def test_an_unwritable_state_directory_only_costs_the_cache(tmp_path: Path) -> None:
    agent(tmp_path / "agents", "a")
    blocker = write(tmp_path / "state", "a file where the folder should be")
    catalog = loader(DefinitionSources(user_dir=tmp_path / "agents"), blocker).load()
    assert catalog.names() == ("a",)
