"""The container both column forms share: a magic line, a JSON line of metadata, then the columns'
values one per line, column after column (archive/probe_codec.py, archive/counters_codec.py)."""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def wrap(magic: str, meta: dict[str, Any], columns: Iterable[list[str]]) -> str:
    return f"{magic}\n{json.dumps(meta)}\n" + "".join("\n".join(c) + "\n" for c in columns)


def unwrap(form: str, magic: str) -> tuple[dict[str, Any], list[str]]:
    """(metadata, every value in order); ValueError when the form is not one of `magic`."""
    first, meta_line, body = form.split("\n", 2)
    if first != magic:
        raise ValueError(f"not a {magic!r} form (first line {first[:40]!r})")
    return json.loads(meta_line), body.split("\n")
