"""WebFetch's second step, as in Claude Code: a small, fast model reads the fetched page and answers the prompt, so
the agent gets the answer instead of the whole page."""

from __future__ import annotations

from typing import Final

from ..core.errors import ModelAPIError
from ..core.messages import TextPart, UserMessage
from ..models.base import ModelRequest
from .base import ModelAccess

MAX_ANSWER_TOKENS: Final = 8_192
READER_SYSTEM: Final = "You read web pages for another AI agent and answer its questions about them."
READER_REQUEST: Final = """\
The content of the web page {url} follows.

<page>
{content}
</page>

{prompt}

Answer from the page above only, and keep the answer concise. Quote the page word for word only where the exact \
wording matters, and keep each quote short (a sentence or two). If the page does not say, answer that it does not."""


async def answer_from_page(models: ModelAccess, *, url: str, content: str, prompt: str) -> str:
    """The fast model's answer to `prompt` about the page.

    Raises:
        ModelAPIError: the model could not be asked (the caller falls back to the page itself).
    """
    request = ModelRequest(
        model=models.fast_model_id,
        system=READER_SYSTEM,
        messages=(UserMessage(content=READER_REQUEST.format(url=url, content=content, prompt=prompt)),),
        tools=(),
        max_tokens=MAX_ANSWER_TOKENS,
    )
    response = await models.model.request(request)
    answer = "".join(part.text for part in response.parts if isinstance(part, TextPart)).strip()
    if not answer:
        raise ModelAPIError("the model that reads the page gave an empty answer")
    return answer
