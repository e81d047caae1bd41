"""Forged answers to a subagent's permission question through the dashboard: another site's page (a form or a
"simple" fetch with a form-encoded or text/plain body, no secret, or a foreign Origin), a link that carries the
secret in its URL, and a DNS-rebinding page whose Host is not the dashboard's. Each would let someone other than the
person at this machine allow a call the model wants to make; each is refused and the question stays open, on the
dashboard that answers in its own process and on the one that answers through the server's control channel."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ..dashboard_support import PERSON, asking_task, client, served_dashboard, writing_model
from ..support import make_settings, running_app

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("here", [True, False], ids=["in-process", "control-channel"])
async def test_forged_answers_are_refused_and_the_question_stays_open(tmp_path: Path, here: bool) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    async with (
        running_app(settings, model=writing_model(settings.cwd)) as app,
        served_dashboard(app, here=here) as dashboard,
    ):
        record, question = await asking_task(app)
        answer = f"/api/tasks/{record.id}/answer"
        body = {"question_id": question.id, "choice": "always"}
        token = dashboard.access.token
        ours = f"http://127.0.0.1:{dashboard.access.port}"
        async with client(dashboard, with_token=False) as anonymous:
            attacks = [
                # another site's fetch or form: it cannot know the secret
                await anonymous.post(answer, json=body),
                # a link or an image that carries the secret in its URL (URLs leak into logs and history)
                await anonymous.post(answer, params={"token": token}, json=body),
                # a page of another site that somehow holds the secret: its Origin gives it away
                await anonymous.post(
                    answer, json=body, headers={"X-Dashboard-Token": token, "Origin": "http://evil.test"}
                ),
                # an HTML form posts form-encoded bodies without a preflight
                await anonymous.post(
                    answer,
                    data={"question_id": question.id, "choice": "always"},
                    headers={"X-Dashboard-Token": token, "Origin": ours},
                ),
                # a "simple" fetch with a text/plain body holding JSON
                await anonymous.post(
                    answer,
                    content=f'{{"question_id": "{question.id}", "choice": "always"}}',
                    headers={"X-Dashboard-Token": token, "Content-Type": "text/plain"},
                ),
                # a page on a rebound name reaches 127.0.0.1, but its Host header is its own
                await anonymous.post(
                    answer, json=body, headers={"X-Dashboard-Token": token, "Host": "attacker.example"}
                ),
                # GET never acts
                await anonymous.get(answer, params={"token": token, **body}),
            ]
        assert [response.status_code for response in attacks] == [403, 403, 403, 415, 415, 421, 405]
        for response in attacks:
            assert "access-control-allow-origin" not in response.headers
        assert record.state == "waiting" and app.tasks.open_questions(record) == [question]
        assert not (settings.cwd / ".claude" / "settings.local.json").exists()

        async with client(dashboard) as api:  # the page itself: secret in the header, JSON, its own Origin
            given = await api.post(
                answer, json={"question_id": question.id, "choice": "deny"}, headers={"Origin": ours}
            )
        assert given.status_code == (200 if here else 202), given.text
        with anyio.fail_after(10):
            await record.done.wait()
    assert question.answer is not None and question.answer.kind == "declined"
    assert (question.answer.by, question.answer.via) == (PERSON, "the dashboard")
    assert not (settings.cwd / "notes.txt").exists()
