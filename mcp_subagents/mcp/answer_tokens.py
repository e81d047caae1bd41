"""The tokens that let the App view, and only the App view, answer a subagent's permission question.

The model of a host and the view it shows act for the same principal, and the model may well know a task's id and
a question's id (a task's text, a 2026-era input request shows them). What it never sees is the `_meta` of a
`TaskList` result: `TaskList` is a tool only the app may call, and MCP Apps keeps a result's `_meta` out of the
model's context. So each open question's token rides there, and `TaskAnswer` takes an answer only with it: an HMAC,
under a secret this server makes at start and never writes anywhere, of the caller's principal and the question.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass, field

ANSWER_TOKENS_META = "io.github.mcp-subagents/answer-tokens"
"""The key of a `TaskList` result's `_meta` that maps each open question's id to its token."""


@dataclass(frozen=True, slots=True)
class AnswerTokens:
    """Issues and checks answer tokens; one per server, its secret gone when the server stops."""

    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    def issue(self, principal: str, question_id: str) -> str:
        message = json.dumps([principal, question_id]).encode()
        digest = hmac.new(self.secret, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def matches(self, principal: str, question_id: str, token: str) -> bool:
        return hmac.compare_digest(self.issue(principal, question_id).encode(), token.encode("utf-8", "replace"))
