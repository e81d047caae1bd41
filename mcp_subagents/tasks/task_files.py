"""The files of the tasks a manager runs: each output file held open while its task runs, and every line written
inline (appending a line to a local file costs microseconds, a thread hop ~250 us). A team's replica gives each file
a copy function that mirrors it to the database."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import anyio

from ..core.messages import Message
from ..core.redaction import Redactor
from ..core.state import AppendFile
from .record import TaskRecord
from .transcripts import TranscriptHeader

logger = logging.getLogger(__name__)

Copy = Callable[[str], None]


class TaskFiles:
    def __init__(self, redact: Redactor) -> None:
        self._redact = redact
        self._outputs: dict[str, AppendFile] = {}
        """The output files of the tasks that have not ended, held open while they run."""

    def hold_output(self, record: TaskRecord, copy: Copy | None) -> None:
        self._outputs[record.id] = _output_file(record, copy)

    def release_output(self, record: TaskRecord) -> None:
        output = self._outputs.pop(record.id, None)
        if output is not None:
            output.close()

    async def open(self, record: TaskRecord, opening: Callable[[], None]) -> None:
        """Create the task's files in a worker thread and write their first lines; `record.opened` is set after,
        whatever happens (even at shutdown: a transcript always starts with its header)."""
        with anyio.CancelScope(shield=True):
            try:
                await anyio.to_thread.run_sync(self._create, record)
                opening()
            finally:
                record.opened.set()

    def write_opening(
        self, record: TaskRecord, header: TranscriptHeader, history: tuple[Message, ...], lines: list[str]
    ) -> None:
        """The transcript's header (and the history a resumed task continues) and the output file's first lines."""
        write_transcript(record.transcript.header, header)
        for message in history:
            write_transcript(record.transcript.message, message)
        for line in lines:
            self.append_output(record, line)

    def _create(self, record: TaskRecord) -> None:
        """Create the task's two files; blocking, so run in a worker thread. A file that cannot be created is
        reported when it is first written."""
        for created in (record.transcript, self._outputs.get(record.id)):
            if created is not None:
                with contextlib.suppress(OSError):
                    created.open()

    def append_output(self, record: TaskRecord, text: str) -> None:
        held = self._outputs.get(record.id)
        output = held or _output_file(record, None)  # a line about a task that has ended: opened for that line alone
        try:
            output.append(self._redact(text))
        except OSError:
            logger.warning("could not write output file %s", record.output_path)
        finally:
            if held is None:
                output.close()


def recent_output(record: TaskRecord, max_chars: int = 4000) -> str:
    """The end of the task's output file (all of it when short)."""
    try:
        text = record.output_path.read_text(encoding="utf-8")
    except OSError:
        return ""
    return text if len(text) <= max_chars else "…" + text[-max_chars:]


def write_transcript(write: Callable[..., None], *args: object, **kwargs: object) -> None:
    """One transcript line; a disk that refuses it is logged, and the task goes on."""
    try:
        write(*args, **kwargs)
    except OSError:
        logger.warning("could not write a transcript line", exc_info=True)


def _output_file(record: TaskRecord, copy: Copy | None) -> AppendFile:
    return AppendFile(record.output_path, errors="backslashreplace", copy=copy)
