"""Which trial files the archive stores in a column form, and the check that keeps it lossless.

A form is used only when it decodes to the very same bytes; otherwise the file is stored as it is.
The member of such a file is named <file> + SUFFIX in the tar.
"""
from __future__ import annotations

from types import ModuleType

from archive import counters_codec, probe_codec

SUFFIX = ".columns"
# file name -> the codec of its form
FORMS: dict[str, ModuleType] = {"tcp_probe.trace": probe_codec, "qdisc.csv": counters_codec}
ERRORS = (probe_codec.CodecError, counters_codec.CodecError, UnicodeDecodeError)


def _codec(name: str) -> ModuleType | None:
    return FORMS.get(name.rsplit("/", 1)[-1])


def to_form(name: str, data: bytes) -> bytes | None:
    """The stored form of this file, or None to store the bytes as they are."""
    codec = _codec(name)
    if codec is None:
        return None
    try:
        text = data.decode("utf-8")
        form = codec.encode(text)
        same = codec.decode(form) == text
    except ERRORS:
        return None
    return form.encode("utf-8") if same else None


def member_file(member: str) -> str:
    """The trial file a tar member holds: a form's member restores to the file it was made from."""
    base = member.removesuffix(SUFFIX)
    return base if member.endswith(SUFFIX) and _codec(base) else member


def from_form(member: str, data: bytes) -> bytes:
    """The file's bytes back from its member (raises one of ERRORS if the form is damaged)."""
    codec = _codec(member_file(member))
    if codec is None or not member.endswith(SUFFIX):
        return data
    return codec.decode(data.decode("utf-8")).encode("utf-8")
