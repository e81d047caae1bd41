"""Writing a small JSON file the person or another process reads: replaced in one step, so a reader never sees
half of it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def replace_json(path: Path, data: dict[str, Any], *, folder_mode: int = 0o777) -> None:
    """Write `data` to a temporary file beside `path` (private to its owner) and rename it over `path`.

    Raises:
        OSError: the folder or the file cannot be written; nothing is left behind.
    """
    path.parent.mkdir(mode=folder_mode, parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=2, ensure_ascii=False)
            file.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
