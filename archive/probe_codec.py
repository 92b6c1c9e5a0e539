"""A lossless columnar form of ftrace tcp_probe text, so the archived traces take a third of the space.

tcp_probe writes one ~260-byte line per ACK: a full run moves tens of GB, and its traces are most
of what `data/` commits to git. xz finds little to share between neighbouring lines, whose
timestamps and sequence numbers all differ; stored as columns, with timestamps and sequence numbers
as deltas (per flow), the same trace compresses about 2.7 times smaller.

The form is only a storage form: `decode(encode(text)) == text` byte for byte, and
archive/stored_forms.py checks that before the archive uses it (keeping the text as it is
otherwise); restore checks the decoded bytes against the manifest's SHA-256. Lines that are not
tcp_probe events are kept whole.
"""
from __future__ import annotations

import json
import re

from archive import column_form

MAGIC = "tcprepro-probe-columns 1"
# ftrace's line: "<task>-<pid> [<cpu>] <flags> <seconds>.<micros>: tcp_probe: k=v k=v ..."
_EVENT = re.compile(r"^(?P<head>.*?)(?P<sec>\d+)\.(?P<usec>\d{6}): tcp_probe: (?P<rest>\S.*)$")
_HEX = re.compile(r"0x(?:0|[1-9a-f][0-9a-f]*)")
_INT = re.compile(r"-?(?:0|[1-9]\d*)")
# 32-bit sequence numbers, stored as the change since the flow's previous event (mod 2^32)
SEQ_KEYS = ("snd_nxt", "snd_una")
_FLOW_KEYS = ("src", "dest")


class CodecError(ValueError):
    """Text this codec cannot hold losslessly, or an encoded form that is damaged."""


def _seq_delta(new: int, old: int) -> int:
    d = (new - old) % (1 << 32)
    return d - (1 << 32) if d >= 1 << 31 else d


def encode(text: str) -> str:
    """The columnar form of a tcp_probe trace (a line it cannot split is kept whole, in "raw")."""
    lines = text.split("\n")
    templates: dict[str, int] = {}
    cols: dict[str, list[str]] = {"template": [], "head": [], "usec": [], "raw": []}
    last_us = 0
    last_seq: dict[tuple[str, ...], int] = {}
    for line in lines:
        m = _EVENT.match(line)
        pairs = [tok.split("=", 1) for tok in m["rest"].split(" ")] if m else []
        if not m or any(len(p) != 2 or not p[0] for p in pairs) or m["sec"] != str(int(m["sec"])):
            cols["template"].append("-")
            cols["raw"].append(line)
            continue
        keys = " ".join(k for k, _ in pairs)
        cols["template"].append(str(templates.setdefault(keys, len(templates))))
        cols["head"].append(m["head"])
        now_us = int(m["sec"]) * 1_000_000 + int(m["usec"])
        cols["usec"].append(str(now_us - last_us))
        last_us = now_us
        values = dict(pairs)
        flow = tuple(values.get(k, "") for k in _FLOW_KEYS)
        for key, value in pairs:
            col = cols.setdefault(f"v:{key}", [])
            if key in SEQ_KEYS:
                # "=" + the value itself: a flow's first event, or a value that is not hex
                prev = last_seq.get((*flow, key))
                if not _HEX.fullmatch(value):
                    col.append("=" + value)
                    continue
                seq = last_seq[(*flow, key)] = int(value, 16)
                col.append("=" + value if prev is None else str(_seq_delta(seq, prev)))
            else:
                col.append(value)
    for name, column in cols.items():
        if any("\n" in v for v in column):
            raise CodecError(f"column {name} would hold a line break")
    meta = {"templates": list(templates), "columns": {n: len(v) for n, v in cols.items()}}
    return column_form.wrap(MAGIC, meta, cols.values())


def decode(form: str) -> str:
    """The trace text back from encode()'s form."""
    try:
        header, rows = column_form.unwrap(form, MAGIC)
        templates = [t.split(" ") for t in header["templates"]]
        cols: dict[str, list[str]] = {}
        at = 0
        for name, count in header["columns"].items():
            cols[name] = rows[at:at + count]
            at += count
        iters = {n: iter(v) for n, v in cols.items()}
        out: list[str] = []
        now_us = 0
        last_seq: dict[tuple[str, ...], int] = {}
        for tid in cols["template"]:
            if tid == "-":
                out.append(next(iters["raw"]))
                continue
            keys = templates[int(tid)]
            now_us += int(next(iters["usec"]))
            pairs = []
            for key in keys:
                pairs.append((key, next(iters[f"v:{key}"])))
            values = dict(pairs)
            flow = tuple(values.get(k, "") for k in _FLOW_KEYS)
            rest = []
            for key, value in pairs:
                if key in SEQ_KEYS and value.startswith("="):
                    value = value[1:]
                    if _HEX.fullmatch(value):
                        last_seq[(*flow, key)] = int(value, 16)
                elif key in SEQ_KEYS:
                    if not _INT.fullmatch(value):
                        raise CodecError(f"{key}: {value!r} is neither a delta nor a literal")
                    seq = last_seq[(*flow, key)] = (last_seq[(*flow, key)] + int(value)) % (1 << 32)
                    value = f"0x{seq:x}"
                rest.append(f"{key}={value}")
            sec, usec = divmod(now_us, 1_000_000)
            out.append(f"{next(iters['head'])}{sec}.{usec:06d}: tcp_probe: {' '.join(rest)}")
        return "\n".join(out)
    except (ValueError, KeyError, IndexError, StopIteration, json.JSONDecodeError) as exc:
        raise CodecError(f"damaged tcp_probe column form: {exc!r}") from exc

