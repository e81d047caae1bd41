"""What the host reads about a task on its way: launched, handed over, its status, its stop, its output file lines."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from ..agent.loop import Compacted, ModelResponded, ToolFinished, ToolStarted
from ..permissions.asking import Answer, OpenQuestion
from ..tasks.outcome import Stall, TaskOutcome
from ..tasks.record import BudgetWarning, QuestionAnswered, QuestionAsked, Stalled, TaskEvent, TaskRecord
from .envelopes import escape_attribute, outcome_text, stall_label, stall_text, usd_value
from .inert import inert
from .questions import question_headline, waiting_text
from .tree import record_entry, tree_lines


def launched_text(record: TaskRecord) -> str:
    return (
        f"Task launched in the background.\n"
        f"task_id: {record.id}\n"
        f"agent: {record.agent}\n"
        f"output_file: {record.output_path}\n"
        f'Read the result with TaskOutput {{"task_id": "{record.id}"}}; it waits for completion unless block is '
        f"false. Stop the task with TaskStop. The output file grows as the task runs."
    )


def handover_text(
    record: TaskRecord, *, waited_s: float, recent_output: str, questions: Sequence[OpenQuestion] = ()
) -> str:
    waiting = "".join(f"It is {waiting_text(entry.question)}\n" for entry in questions)
    return (
        f"Task {record.id} ({record.agent}: {record.description}) is still running after "
        f"{waited_s:g} s, so it continues in the background; nothing is lost.\n{waiting}"
        f'Call TaskOutput with {{"task_id": "{record.id}"}} to wait for its result, or TaskStop to stop it.\n'
        f"output_file: {record.output_path}\n\n"
        f"Output so far:\n{recent_output}"
    )


def status_text(
    record: TaskRecord,
    *,
    queue: tuple[int, int] | None,
    recent_output: str,
    max_result_chars: int,
    subtasks: Sequence[tuple[int, TaskRecord]] = (),
    questions: Sequence[OpenQuestion] = (),
    stall: Stall | None = None,
) -> str:
    """TaskOutput's answer: where the task stands, the questions it waits on, how it stalled (if it has), the
    subagents it launched, then its result or its output so far."""
    state = "waiting" if questions and not record.finished else record.state
    lines = [f"<task_id>{record.id}</task_id>", f"<agent>{record.agent}</agent>", *_ran(record)]
    lines.append(f"<status>{state}</status>")
    lines += [waiting_element(entry) for entry in questions]
    if questions:
        lines.append(f"<note>{WAITING_NOTE}</note>")
    if record.parent is not None:
        lines.append(f"<parent_task_id>{record.parent}</parent_task_id>")
    if subtasks:
        tree = "\n".join(tree_lines(record_entry(level, child) for level, child in subtasks))
        lines.append(f"<subtasks>\n{tree}\n</subtasks>")
    if queue is not None:
        lines.append(f"<queue_position>{queue[0]} of {queue[1]}</queue_position>")
    elif record.active:
        lines.append(f"<progress>{progress_text(record)}</progress>")
    if stall is not None and not record.finished:
        lines.append(f'<stalled kind="{stall_label(stall)}">{escape_attribute(stall_text(stall))}</stalled>')
    if record.outcome is not None:
        lines.append(outcome_text(record, record.outcome, max_chars=max_result_chars))
    else:
        lines.append(f"<output>\n{recent_output}</output>")
    return "\n".join(lines)


def _ran(record: TaskRecord) -> list[str]:
    """The model the task runs on and its effort, and the warning when the agent file's model was overridden."""
    if not record.model:
        return []
    effort = f' effort="{escape_attribute(record.effort)}"' if record.effort else ""
    lines = [f"<model{effort}>{escape_attribute(record.model)}</model>"]
    if record.model_note and record.outcome is None:  # a finished task's result carries it
        lines.append(f"<warning>{escape_attribute(record.model_note)}</warning>")
    return lines


WAITING_NOTE = (
    "The task is blocked until the person answers; you cannot answer for them. They can answer in this host's "
    "permission form (each TaskOutput call about the task shows it where the host can), in the task's card of the "
    "MCP App view, on the dashboard, or with `mcp-subagents tasks answer TASK_ID --allow|--always|--deny`. A "
    "question nobody answers within --ask-timeout is denied (a folder's trust is then withheld for this task) and "
    "the task goes on."
)


def waiting_element(entry: OpenQuestion) -> str:
    asked = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(entry.asked_at))
    return (
        f'<waiting_for_you task_id="{escape_attribute(entry.task_id)}" asked_at="{asked}">'
        f"{escape_attribute(question_headline(entry.question))}</waiting_for_you>"
    )


def progress_text(record: TaskRecord) -> str:
    """Where a running task stands: `starting` until its first model request, then turns, tools, tokens, cost."""
    progress = record.progress
    if progress.turn == 0:
        return f"starting, {progress.elapsed():.0f} s"
    tokens = progress.usage.total_tokens
    cost = record.cost_usd()
    spent = "" if cost is None else f", cost_usd {usd_value(cost)}"
    launched = len(record.children)
    nested = f", {launched} nested task(s) launched (their cost included)" if launched else ""
    return (
        f"turn {progress.turn} of {progress.max_turns}, {progress.tool_uses} tool use(s), {tokens} tokens{spent}, "
        f"{progress.elapsed():.0f} s{nested}"
    )


def budget_warning_text(warning: BudgetWarning) -> str:
    budget = warning.budget
    share = warning.spent_usd / budget.usd if budget.usd else 1.0
    return (
        f"spent ${usd_value(warning.spent_usd)} of its ${budget.usd:g} budget ({share:.0%}, {budget.source}); "
        "it stops when the budget is spent"
    )


def still_running_text(record: TaskRecord, questions: Sequence[OpenQuestion]) -> str:
    """`resume` of a task that has not ended within the foreground deadline."""
    waiting = "".join(f" It is {waiting_text(entry.question)}." for entry in questions)
    return (
        f"Task {record.id} ({record.agent}) is still {record.state}, so it cannot be resumed yet.{waiting} Wait for "
        f'it with TaskOutput {{"task_id": "{record.id}"}}, or stop it with TaskStop, then resume it.'
    )


def already_finished_text(record: TaskRecord) -> str:
    return f"Task {record.id} ({record.description}) already finished with status {record.state}; nothing to stop."


def stop_pending_text(record: TaskRecord) -> str:
    return (
        f"Stop requested for task {record.id} ({record.description}), but it has not finished shutting down "
        "yet; check it with TaskOutput."
    )


def stopped_text(record: TaskRecord) -> str:
    return f"Successfully stopped task: {record.id} ({record.description})"


def stale_answer_text(record: TaskRecord | None, *, task_id: str) -> str:
    """A repeated Task call whose permission questions are no longer open (answered before, or timed out)."""
    if record is None:
        return f"The permission answer came too late: task {task_id} is unknown to this server."
    return (
        f"The permission answer came too late: the question it answers is no longer open (it was answered "
        f"already, or nobody answered in time and the call was denied). Task {record.id} ({record.agent}) is "
        f'{record.state}; read its result with TaskOutput {{"task_id": "{record.id}"}}.'
    )


def describe_event(event: TaskEvent) -> str | None:
    """One readable line for a turn or tool event (the output file's format), or None for other events."""
    if isinstance(event, BudgetWarning):
        return f"[turn {event.turn}] budget: {budget_warning_text(event)}\n"
    if isinstance(event, ModelResponded):
        calls = ", ".join(call.name for call in event.message.tool_calls)
        text = " ".join(event.message.text.split())
        said = f" {text[:300]}{'…' if len(text) > 300 else ''}" if text else ""
        return f"[turn {event.turn}] assistant:{said}{f' (calls: {calls})' if calls else ''}\n"
    if isinstance(event, ToolStarted):
        return f"[turn {event.turn}] tool {event.call.name} {json.dumps(event.call.arguments)[:300]}\n"
    if isinstance(event, ToolFinished):
        status = "error" if event.result.is_error else "ok"
        first = event.result.content.strip().splitlines()[0][:200] if event.result.content.strip() else ""
        return f"[turn {event.turn}] {event.call.name} -> {status} ({len(event.result.content)} chars): {first}\n"
    if isinstance(event, QuestionAsked):
        return f"[waiting] {waiting_text(event.entry.question)}\n"
    if isinstance(event, QuestionAnswered):
        return f"[answered] {answer_line(event.answer)}\n"
    if isinstance(event, Stalled):
        return f"[{stall_label(event.stall)}] {stall_text(event.stall)}\n"
    if isinstance(event, Compacted):
        why = "it passed the compaction threshold" if event.reason == "threshold" else "the model found it too long"
        return f"[turn {event.turn}] conversation of {event.replaced} messages summarised ({why})\n"
    return None


def answer_line(answer: Answer) -> str:
    """What became of a question, for output files and lists."""
    who = f" by {inert(answer.by, one_line=True)}" if answer.by else ""
    where = f" via {inert(answer.via, one_line=True)}" if answer.via else ""
    match answer.kind:
        case "allowed":
            return f"{'always allowed' if answer.always else 'allowed'}{who}{where}"
        case "declined":
            return f"denied{who}{where}"
        case "unanswered":
            return answer.why_not()


def answered_text(headline: str, answer: Answer, note: str | None = None) -> str:
    """What the App view shows after the person answered a question there; `note` says what "always" added."""
    match answer.kind:
        case "allowed" if answer.always:
            return f"Always allowed: {headline}. {note or ''}".rstrip()
        case "allowed":
            return f"Allowed once: {headline}. The task goes on."
        case _:
            return f"Denied: {headline}. The task goes on without that call."


def wrong_answer_token_text(question_id: str) -> str:
    return (
        f"The answer was not taken: 'token' does not match question {inert(question_id, one_line=True)}. Only the "
        "task view answers, with the token its TaskList result carries; the question is still open."
    )


_ENDED = {"completed": "completed", "failed": "failed", "stopped": "was stopped", "interrupted": "was interrupted"}


def end_notice_text(record: TaskRecord) -> str:
    """One line for the conversation when a task the person launched has ended (the App view sends it)."""
    agent, description = inert(record.agent, one_line=True), inert(record.description, one_line=True)
    return (
        f"Subagent task {record.id} ({agent}: {description}) {_ENDED.get(record.state, record.state)}; read its "
        f'result with TaskOutput {{"task_id": "{record.id}"}}.'
    )


class OutputFileTexts:
    """The task manager's `TaskTexts`: output files read as the host's view of a task does."""

    def event_line(self, event: TaskEvent) -> str | None:
        return describe_event(event)

    def budget_warning(self, warning: BudgetWarning) -> str:
        return budget_warning_text(warning)

    def end(self, record: TaskRecord, outcome: TaskOutcome) -> str:
        return outcome_text(record, outcome, max_chars=None)


OUTPUT_FILE_TEXTS = OutputFileTexts()
