"""Parsed agent files kept in the state directory, per project: a restart reads them instead of parsing, gives the
very same catalog, parses what changed, keeps each project's own, and ignores a cache it cannot trust."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.definitions import AgentDefinition, CatalogLoader, DefinitionSources, LoadError
from mcp_subagents.definitions import cache as cache_module
from mcp_subagents.definitions import sources as sources_module
from mcp_subagents.definitions.cache import CACHE_FILE, CatalogCache, cache_path, parser_digest, settled

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


def cache_file(sources: DefinitionSources, state: Path) -> Path:
    """Where the state directory keeps what the agent files of `sources` said."""
    return cache_path(state / CACHE_FILE, sources.cache_identity())


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        b'{"format": 1, "parser": "other code", "entries": []}',
        b"\xff\xfe",
        b'{"format": 3, "parser": "PARSER", "sources": "SOURCES", "entries": {"a": 1}}',
    ],
    ids=["broken", "not-an-object", "other-parser", "not-utf8", "entries-not-a-list"],
)
def test_a_cache_that_cannot_be_trusted_is_ignored_and_replaced(
    tmp_path: Path, parses: list[Path], content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    agent(tmp_path / "agents", "a", "the real one")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    cache = cache_file(sources, tmp_path / "state")
    content = content.replace(b"PARSER", parser_digest().encode())
    write(cache, content.replace(b'"SOURCES"', json.dumps(sources.cache_identity()).encode()))
    with caplog.at_level(logging.DEBUG, logger="mcp_subagents.definitions.cache"):
        catalog = loader(sources, tmp_path / "state").load()
    assert catalog.agents["a"].description == "the real one"
    assert len(parses) == 1
    assert any(str(cache) in record.getMessage() and "ignored" in record.getMessage() for record in caplog.records)
    assert json.loads(cache.read_text(encoding="utf-8"))["entries"][0][0].endswith("a.md")  # rewritten


def test_entries_that_are_not_what_this_code_writes_are_ignored(
    tmp_path: Path, parses: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    path = agent(tmp_path / "agents", "a", "the real one")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    loader(sources, tmp_path / "state").load()
    cache = cache_file(sources, tmp_path / "state")
    document = json.loads(cache.read_text(encoding="utf-8"))
    [path_, source, plugin, signature, outcome] = document["entries"][0]
    assert path_ == str(path)
    document["entries"] = [
        [path_, source, plugin, signature, ["agent", "a", "planted", "Read", [], []]],  # tools must be a list
        [path_, "elsewhere", plugin, signature, outcome],
        [path_, source, plugin, [*signature[:3], "1"], outcome],
        "not an entry",
    ]
    cache.write_text(json.dumps(document), encoding="utf-8")
    parses.clear()
    with caplog.at_level(logging.INFO, logger="mcp_subagents.definitions.cache"):
        catalog = loader(sources, tmp_path / "state").load()
    assert catalog.listing()[0][1] == "the real one" and parses == [path]
    assert any("4 entries ignored" in record.getMessage() for record in caplog.records)


def test_a_cache_file_written_for_other_sources_is_not_used(tmp_path: Path, parses: list[Path]) -> None:
    agent(tmp_path / "agents", "a", "mine")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    loader(sources, tmp_path / "state").load()
    cache = cache_file(sources, tmp_path / "state")
    document = json.loads(cache.read_text(encoding="utf-8"))
    document["sources"][2] = str(tmp_path / "other")
    document["entries"][0][4][2] = "planted"
    cache.write_text(json.dumps(document), encoding="utf-8")
    parses.clear()
    assert loader(sources, tmp_path / "state").load().listing()[0][1] == "mine"
    assert len(parses) == 1


def test_a_cache_entry_for_a_file_that_changed_is_not_used(tmp_path: Path) -> None:
    """A cache entry is only ever taken for a file whose signature still matches."""
    path = agent(tmp_path / "agents", "a", "original")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    loader(sources, tmp_path / "state").load()
    cache = cache_file(sources, tmp_path / "state")
    document = json.loads(cache.read_text(encoding="utf-8"))
    document["entries"][0][4][2] = "planted"
    cache.write_text(json.dumps(document), encoding="utf-8")
    assert loader(sources, tmp_path / "state").load().listing()[0][1] == "planted"  # an unchanged file: trusted
    agent(tmp_path / "agents", "a", "original, edited")
    stat_ = path.stat()
    os.utime(path, ns=(stat_.st_atime_ns, stat_.st_mtime_ns + 1_000_000))
    assert loader(sources, tmp_path / "state").load().agents["a"].description == "original, edited"


def test_an_edit_that_keeps_the_size_and_puts_the_time_back_is_read(tmp_path: Path) -> None:
    """Tools that keep a file's mtime (`cp -p`, `rsync -t`, `touch -r`) cannot hide an edit: the ctime changes."""
    path = agent(tmp_path / "agents", "a", "first")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    before = path.stat()
    loader(sources, tmp_path / "state").load()
    agent(tmp_path / "agents", "a", "other")  # the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert loader(sources, tmp_path / "state").load().agents["a"].description == "other"


def test_two_projects_in_one_state_directory_keep_their_own_agents(tmp_path: Path, parses: list[Path]) -> None:
    """The default state directory is shared by all of a person's projects: starting them in turn parses each
    project's files once, and each lists its own agents, never the other's."""
    state = tmp_path / "state"
    projects = {name: tmp_path / name for name in ("first", "second")}
    for name, root in projects.items():
        agent(root / ".claude" / "agents", "shared-name", f"the {name} project's")
        agent(root / ".claude" / "agents", f"only-{name}")
    for _ in range(3):
        for name, root in projects.items():
            catalog = loader(DefinitionSources(project_root=root), state).load()
            assert set(catalog.names()) == {"shared-name", f"only-{name}"}
            assert catalog.listing()[1][1] == f"the {name} project's"
            assert catalog.agents["shared-name"].description == f"the {name} project's"
    assert len([path for path in parses if path.name.startswith("only-")]) == 2  # each file at the first start only
    assert len({cache_file(DefinitionSources(project_root=root), state) for root in projects.values()}) == 2


def test_the_least_recently_used_projects_are_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "MAX_FILES", 2)
    state = tmp_path / "state"
    roots = [tmp_path / f"project-{number}" for number in range(3)]
    for root in roots:
        agent(root / ".claude" / "agents", "a")
    files = [cache_file(DefinitionSources(project_root=root), state) for root in roots]
    loader(DefinitionSources(project_root=roots[0]), state).load()
    loader(DefinitionSources(project_root=roots[1]), state).load()
    for number, path in enumerate(files[:2]):  # make their order plain whatever the clock's resolution
        os.utime(path, (1_000_000 + number, 1_000_000 + number))
    loader(DefinitionSources(project_root=roots[0]), state).load()  # project 0 used again (read, not rewritten)
    loader(DefinitionSources(project_root=roots[2]), state).load()
    assert [path.exists() for path in files] == [True, False, True]


def test_the_cache_files_stay_within_their_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    roots = [tmp_path / f"project-{number}" for number in range(3)]
    for root in roots:
        agent(root / ".claude" / "agents", "a", "x" * 1000)
    files = [cache_file(DefinitionSources(project_root=root), state) for root in roots]
    loader(DefinitionSources(project_root=roots[0]), state).load()
    monkeypatch.setattr(cache_module, "MAX_BYTES", files[0].stat().st_size * 2 + 10)
    for root in roots[1:]:
        loader(DefinitionSources(project_root=root), state).load()
    assert [path.exists() for path in files] == [False, True, True]


def test_a_killed_writers_temporary_file_is_removed(tmp_path: Path) -> None:
    agent(tmp_path / "agents", "a")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    folder = cache_file(sources, tmp_path / "state").parent
    old, recent = write(folder / ".old.123.tmp", "{"), write(folder / ".recent.456.tmp", "{")
    os.utime(old, (1_000_000, 1_000_000))
    loader(sources, tmp_path / "state").load()
    assert not old.exists() and recent.exists()  # a writer may still be at work on the recent one


def test_servers_writing_at_once_leave_one_whole_file(tmp_path: Path) -> None:
    """Each writer replaces the file with its own complete one: a reader sees one writer's entries, never a mix."""
    identity: list[Any] = ["the", "sources"]
    writers = [
        {
            (f"/agents/{writer}-{number}.md", "user", None): ((1, 2, 3, 4), LoadError(f"{writer}", "e"))
            for number in range(300)
        }
        for writer in ("a", "b", "c")
    ]
    caches = [CatalogCache(tmp_path / CACHE_FILE, identity) for _ in writers]
    seen: list[set[str]] = []

    def write_many(cache: CatalogCache, entries: dict[Any, Any]) -> None:
        for _ in range(30):
            cache.write(entries)

    def read_many() -> None:
        for _ in range(60):
            seen.append({outcome.path for _, outcome in caches[0].read().values() if isinstance(outcome, LoadError)})

    threads = [threading.Thread(target=write_many, args=pair) for pair in zip(caches, writers, strict=True)]
    threads.append(threading.Thread(target=read_many))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(found in ({"a"}, {"b"}, {"c"}, set()) for found in seen)
    assert len(caches[0].read()) == 300
    assert list(caches[0].path.parent.glob("*.tmp")) + list(caches[0].path.parent.glob(".*.tmp")) == []


def test_a_file_whose_time_stamps_are_whole_seconds_is_trusted_once_it_is_older_than_two_seconds() -> None:
    """On a file system that keeps whole seconds, an edit within the same second at the same size keeps the
    signature: such a file is not kept until it is older than that, whatever it says."""
    now = 1_700_000_000_000_000_000
    second = 1_000_000_000
    assert not settled((now - second, 10, now - second, 5), now)
    assert settled((now - 3 * second, 10, now - 3 * second, 5), now)
    assert settled((now - 1, 10, now - 1, 5), now)  # nanoseconds: every write changes them


def test_the_cache_is_private_to_the_user(tmp_path: Path) -> None:
    agent(tmp_path / "agents", "a")
    sources = DefinitionSources(user_dir=tmp_path / "agents")
    loader(sources, tmp_path / "state").load()
    path = cache_file(sources, tmp_path / "state")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_unwritable_state_directory_only_costs_the_cache(tmp_path: Path) -> None:
    agent(tmp_path / "agents", "a")
    blocker = write(tmp_path / "state", "a file where the folder should be")
    catalog = loader(DefinitionSources(user_dir=tmp_path / "agents"), blocker).load()
    assert catalog.names() == ("a",)
