"""Packages whose members load on first use: importing the package imports none of its modules, reading a member
imports the one module that defines it (start-up reads few of them)."""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # this runs at every start, a relay's too: no `typing`, no `collections.abc`
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def members_on_first_use(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `homes` names the module that defines each member, relative to the
    package (".base"). A member once loaded is kept in the package, so it is looked up only once."""
    namespace = sys.modules[package].__dict__

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        namespace[name] = value
        return value

    return load
