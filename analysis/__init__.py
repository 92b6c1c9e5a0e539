"""Analysis layer: raw trial files -> per-trial summary.json -> per-cell cell.json.

`parsers` reads the raw files a trial writes (docs/trial-format.md), `metrics` turns them into
numbers, `summarize` builds a trial's summary.json, `aggregate` applies the papers' trimmed mean
over a cell's trials. JSON Schemas for summary.json and provenance.json live in `schemas/`.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema `analysis/schemas/<name>.schema.json` (e.g. "summary", "provenance")."""
    with (SCHEMA_DIR / f"{name}.schema.json").open() as f:
        return json.load(f)


def validate(doc: Any, name: str) -> None:
    """Raise jsonschema.ValidationError if `doc` does not match schema `name`."""
    # deferred: jsonschema is slow to import, and only validation needs it
    import jsonschema

    schema = load_schema(name)
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)


def require_valid(doc: Any, name: str) -> None:
    """What a trial writes must match its documented format; a mismatch is a bug, named in one line
    (RuntimeError) rather than a schema library's multi-line report."""
    # deferred: jsonschema is slow to import, and only validation needs it
    import jsonschema

    try:
        validate(doc, name)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "<top>"
        raise RuntimeError(f"{name}.json does not match analysis/schemas/{name}.schema.json at "
                           f"'{where}': {exc.message}") from None
