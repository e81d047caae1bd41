"""TodoWrite: the subagent's own task list for the current run."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Tool, ToolAnswer, ToolContext, ToolInput
from .responses import todo_response

TodoStatus = Literal["pending", "in_progress", "completed"]

_MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TodoItem(ToolInput):
    content: str = Field(min_length=1, description="What to do, in the imperative (e.g. 'Run the tests')")
    status: TodoStatus = Field(description="pending, in_progress or completed")
    activeForm: str | None = Field(
        default=None,
        description="The same task in the present continuous, shown while it runs (e.g. 'Running the tests')",
    )


class TodoWriteInput(ToolInput):
    todos: list[TodoItem] = Field(description="The updated todo list (the whole list, replacing the previous one)")


TODOWRITE_DESCRIPTION = """Creates and updates a structured task list for the current run, to track progress on \
multi-step work.

When to use it:
- A task with three or more distinct steps, or several things asked at once.
- When new steps turn up while working: add them.

How to use it:
- Send the whole list each time; it replaces the previous one.
- Keep exactly one task in_progress while working; mark a task completed as soon as it is done, not in batches.
- Mark a task completed only when it is fully done (tests pass, nothing left unresolved). If blocked, keep it \
in_progress and add a task for what has to be resolved.
- Skip this tool for a single, trivial step."""


async def _run_todowrite(ctx: ToolContext, args: TodoWriteInput) -> str:
    old, new = ctx.todos.items, [item.model_dump(exclude_none=True) for item in args.todos]
    ctx.todos.items = new
    if not args.todos:
        return ToolAnswer("The todo list is now empty.", lambda: todo_response(old, new))
    text = (
        "Todos have been modified successfully. Keep using the todo list to track your progress, and proceed "
        f"with the current task.\n\n{render_todos(args.todos)}"
    )
    return ToolAnswer(text, lambda: todo_response(old, new))


def render_todos(todos: list[TodoItem]) -> str:
    lines: list[str] = []
    for item in todos:
        active = f" ({item.activeForm})" if item.status == "in_progress" and item.activeForm else ""
        lines.append(f"{_MARKS[item.status]} {item.content}{active}")
    return "\n".join(lines)


TODOWRITE = Tool(name="TodoWrite", description=TODOWRITE_DESCRIPTION, input_model=TodoWriteInput, run=_run_todowrite)
