"""A lossless column form of a sampler's CSV (qdisc.csv): numbers become per-device deltas.

The qdisc sampler writes a row per device every 10 ms: a timestamp and cumulative counters
(bytes and packets sent, drops) that grow by small steps. As text, xz sees each row as new; as
columns of differences from the same device's previous row, a trial's qdisc.csv compresses about
2.2 times smaller. Only a storage form: archive/stored_forms.py uses it only when it decodes to
the very same bytes.
"""
from __future__ import annotations

import json
import re

from archive import column_form

MAGIC = "tcprepro-counter-columns 1"
KEY = "dev"                                     # rows are differenced against the same device's
_INT = re.compile(r"-?(?:0|[1-9]\d*)")
_DEC = re.compile(r"(0|[1-9]\d*)\.(\d+)")       # fixed-point: the digits after the point are kept


class CodecError(ValueError):
    """Text this form cannot hold, or a form that is damaged."""


def _number(value: str) -> tuple[int, int] | None:
    """(scaled integer, digits after the point) of an integer or a fixed-point value."""
    if _INT.fullmatch(value):
        return int(value), -1
    m = _DEC.fullmatch(value)
    return (int(m[1] + m[2]), len(m[2])) if m else None


def _text(scaled: int, digits: int) -> str:
    if digits < 0:
        return str(scaled)
    if scaled < 0:
        raise CodecError(f"a fixed-point value below zero ({scaled})")
    whole, frac = divmod(scaled, 10 ** digits)
    return f"{whole}.{frac:0{digits}d}"


def encode(text: str) -> str:
    """Column form: a value is "=" + itself, or its difference from the device's previous value
    of that column when both have the same shape (integer, or fixed-point with as many digits)."""
    lines = text.split("\n")
    header, rows = lines[0], lines[1:]
    final_newline = bool(rows) and rows[-1] == ""
    rows = rows[:-1] if final_newline else rows
    names = header.split(",")
    if KEY not in names:
        raise CodecError(f"no {KEY!r} column")
    key_at = names.index(KEY)
    cols: list[list[str]] = [[] for _ in names]
    last: dict[tuple[str, int], tuple[int, int]] = {}
    for row in rows:
        fields = row.split(",")
        if len(fields) != len(names):
            raise CodecError(f"a row with {len(fields)} fields under a header of {len(names)}")
        for i, value in enumerate(fields):
            num = None if i == key_at else _number(value)
            prev = last.get((fields[key_at], i))
            if num is not None:
                last[(fields[key_at], i)] = num
            if num is not None and prev is not None and prev[1] == num[1]:
                cols[i].append(str(num[0] - prev[0]))
            else:
                cols[i].append("=" + value)
    return column_form.wrap(MAGIC, {"header": header, "rows": len(rows), "final_newline": final_newline}, cols)


def decode(form: str) -> str:
    """The CSV text back from encode()'s form."""
    try:
        meta, flat = column_form.unwrap(form, MAGIC)
        names, n = meta["header"].split(","), meta["rows"]
        if len(flat) != len(names) * n + 1:
            raise CodecError(f"{len(flat) - 1} values for {len(names)} columns x {n} rows")
        cols = [flat[i * n:(i + 1) * n] for i in range(len(names))]
        key_at = names.index(KEY)
        last: dict[tuple[str, int], tuple[int, int]] = {}
        out = [meta["header"]]
        for r in range(n):
            dev = cols[key_at][r][1:]
            fields = []
            for i, token in enumerate(c[r] for c in cols):
                if token.startswith("="):
                    value = token[1:]
                    num = None if i == key_at else _number(value)
                else:
                    scaled, digits = last[(dev, i)]
                    num = (scaled + int(token), digits)
                    value = _text(*num)
                if num is not None:
                    last[(dev, i)] = num
                fields.append(value)
            out.append(",".join(fields))
        return "\n".join(out) + ("\n" if meta["final_newline"] else "")
    except (ValueError, KeyError, IndexError, json.JSONDecodeError) as exc:
        raise CodecError(f"damaged counter column form: {exc!r}") from exc
