"""WebSearch, as Claude Code does it: the tool asks the model once more, with the Anthropic API's server-side web
search turned on (and the caller's domain filters), and returns the pages found plus the model's digest of them.

It needs the Anthropic provider: OpenAI-compatible endpoints have no server-side search, so the tool is not offered
there (see `service`), and the validator and the README say so.
"""

from __future__ import annotations

import json
from typing import Final

from pydantic import Field

from ..core.errors import ModelAPIError, ToolError
from ..core.messages import TextPart, UserMessage
from ..models.base import ModelRequest, WebSearchOptions
from .base import Tool, ToolContext, ToolInput

MAX_SEARCHES: Final = 8
MAX_DIGEST_TOKENS: Final = 8_192
SEARCH_SYSTEM: Final = (
    "You search the web for another AI agent. Run the search you are asked for, then answer with a short digest "
    "of what the results say, naming the source of each point."
)
SOURCES_REMINDER: Final = (
    "When you use these results in your answer, cite the pages you rely on as markdown links: [title](url)."
)


class WebSearchInput(ToolInput):
    query: str = Field(min_length=2, description="The search query to use")
    allowed_domains: list[str] | None = Field(default=None, description="Keep only results from these domains")
    blocked_domains: list[str] | None = Field(default=None, description="Leave out results from these domains")


WEBSEARCH_DESCRIPTION = """Searches the web and returns the pages found with a digest of what they say.

- Use it for information beyond your knowledge cutoff or that changes often: current events, recent releases, \
today's documentation.
- `allowed_domains` limits the results to those domains; `blocked_domains` leaves those domains out. Give one or \
the other, not both.
- Each result comes with its title and URL. Cite the pages you use as markdown links in your final report.
- Put the current year in the query when you look for recent information; today's date is in your environment."""


async def _run_websearch(ctx: ToolContext, args: WebSearchInput) -> str:
    if ctx.models is None:
        raise ToolError("WebSearch is unavailable: it needs the Anthropic API's server-side web search.")
    if args.allowed_domains and args.blocked_domains:
        raise ToolError("Give allowed_domains or blocked_domains, not both.")
    request = ModelRequest(
        model=ctx.models.main_model_id,
        system=SEARCH_SYSTEM,
        messages=(UserMessage(content=f"Search the web for: {args.query}"),),
        tools=(),
        max_tokens=MAX_DIGEST_TOKENS,
        web_search=WebSearchOptions(
            allowed_domains=tuple(args.allowed_domains or ()),
            blocked_domains=tuple(args.blocked_domains or ()),
            max_uses=MAX_SEARCHES,
        ),
    )
    try:
        response = await ctx.models.model.request(request)
    except ModelAPIError as exc:
        raise ToolError(f"The web search failed: {exc.message}") from None
    links = [{"title": result.title, "url": result.url} for result in response.search_results]
    digest = "".join(part.text for part in response.parts if isinstance(part, TextPart)).strip()
    found = f"Links: {json.dumps(links, ensure_ascii=False)}" if links else "No pages were found."
    return "\n\n".join(
        part for part in (f'Web search results for "{args.query}":', found, digest, SOURCES_REMINDER) if part
    )


WEBSEARCH = Tool(
    name="WebSearch", description=WEBSEARCH_DESCRIPTION, input_model=WebSearchInput, run=_run_websearch, read_only=True
)
