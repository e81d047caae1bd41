"""The documentation: the reference pages say what the code says, every page is in the site's nav, and the README
stays a one-minute read whose install and test commands are the ones CI runs."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest
import yaml

from mcp_subagents.cli import main
from mcp_subagents.config.settings import RUN_OPTIONS, SERVE_OPTIONS, SOURCE_OPTIONS

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def section(text: str, title: str) -> str:
    """The body of the `## title` section."""
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def fenced_blocks(text: str) -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.DOTALL)


def test_the_checked_in_references_are_what_the_code_generates(generator: Any) -> None:
    stale = [str(path.relative_to(REPO)) for path in generator.stale_pages()]
    assert stale == [], f"{', '.join(stale)} differ from the code: run `python docs/generate.py` and commit them"


def test_a_stale_reference_is_named_with_the_command_that_mends_it(
    generator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    for path, text in generator.pages().items():
        copy = docs / path.relative_to(DOCS)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text, encoding="utf-8")
    monkeypatch.setattr(generator, "DOCS", docs)
    assert generator.main(["--check"]) == 0
    settings_page = docs / "reference" / "settings.md"
    settings_page.write_text(settings_page.read_text(encoding="utf-8").replace("`1800`", "`900`"), encoding="utf-8")
    assert generator.main(["--check"]) == 1
    assert capsys.readouterr().err == "docs/reference/settings.md is out of date: run `python docs/generate.py`\n"


def test_the_settings_reference_gives_every_option_its_variable_and_default(generator: Any) -> None:
    page = generator.pages()[DOCS / "reference" / "settings.md"]
    rows = {
        line.split(" | ")[0].strip("| `").split(" ")[0]: line for line in page.splitlines() if line.startswith("| `--")
    }
    assert set(rows) == {option.flag for option in (*SOURCE_OPTIONS, *RUN_OPTIONS, *SERVE_OPTIONS)}
    for option in (*SOURCE_OPTIONS, *RUN_OPTIONS, *SERVE_OPTIONS):
        assert f"`{option.env}`" in rows[option.flag]
    assert "| `50` |" in rows["--max-turns"] and "| `auto` |" in rows["--sandbox"] and "| off |" in rows["--otel"]
    assert "80% of the window" in rows["--compact-threshold"]  # argparse's %% shows as one %


def test_the_cli_reference_has_a_section_per_command(generator: Any) -> None:
    page = generator.pages()[DOCS / "reference" / "cli.md"]
    titles = re.findall(r"^## `(.*)`$", page, flags=re.MULTILINE)
    assert titles == [
        "mcp-subagents",
        "mcp-subagents serve",
        "mcp-subagents run",
        "mcp-subagents agents list",
        "mcp-subagents agents validate",
        "mcp-subagents dashboard",
        "mcp-subagents tasks list",
        "mcp-subagents tasks show",
        "mcp-subagents tasks tail",
        "mcp-subagents tasks stop",
        "mcp-subagents tasks answer",
    ]
    run = page.split("## `mcp-subagents run`", 1)[1].split("\n## ", 1)[0]
    assert "| `--raw` | print the &lt;task_result&gt; envelope a host gets |" in run
    assert "--max-turns-for-run" not in page  # suppressed in --help, so not documented either


def nav_pages(entries: list[Any]) -> list[str]:
    """The pages a mkdocs nav lists, at any depth."""
    pages: list[str] = []
    for entry in entries:
        value: Any = next(iter(cast("dict[str, Any]", entry).values())) if isinstance(entry, dict) else entry
        pages += nav_pages(cast("list[Any]", value)) if isinstance(value, list) else [str(value)]
    return pages


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = nav_pages(config["nav"])
    on_disk = sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md"))
    assert sorted(in_nav) == on_disk
    assert len(in_nav) == len(set(in_nav))


def test_the_readme_is_short_and_its_links_lead_somewhere() -> None:
    text = readme()
    assert len(text.splitlines()) < 200
    targets = re.findall(r"\]\((?!https?:)([^)#]+)", text)
    assert targets and [target for target in targets if not (REPO / target).is_file()] == []
    assert "OWNER" not in text and "uvx mcp-subagents" not in text  # no placeholder repository, no PyPI release


def test_the_readme_installs_and_serves_from_a_checkout() -> None:
    [commands] = fenced_blocks(section(readme(), "Install and serve"))
    assert "pip install ." in commands and "\nmcp-subagents serve" in commands


def test_ci_runs_exactly_the_readme_test_command_after_the_host_configuration() -> None:
    text = readme()
    assert text.index("\n## Host configuration\n") < text.index("\n## Run the tests\n")
    [block] = fenced_blocks(section(text, "Run the tests"))
    command = block.strip()
    assert "\n" not in command
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert f"\n{command}\n" in ci
    assert "\nmkdocs build --strict\n" in ci


def test_the_readme_agent_file_is_six_lines_that_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = next(block for block in fenced_blocks(readme()) if block.startswith("---\nname: "))
    assert len(agent.splitlines()) == 6
    path = tmp_path / "agent.md"
    path.write_text(agent, encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        main(["agents", "validate", str(path)])
    assert exited.value.code == 0, capsys.readouterr()
    assert capsys.readouterr().err == "all files are valid\n"
