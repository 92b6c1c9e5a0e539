"""Reading a config file a user hands us, before any schema sees it: a regular file of bounded size,
YAML without duplicate keys, aliases that do not expand into millions of values, and only finite
numbers. Each refusal names the file, where in it, and the fix; none hangs (a device, a FIFO, an
alias bomb) and none prints the expanded value back.

The schema (config/schema/*.yaml) bounds each field by what the testbed can do; JSON Schema's
`minimum` and `maximum` let NaN through, so non-finite numbers are refused here, once, for every
field.
"""
from __future__ import annotations

import math
import stat
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1 << 20             # a paper config is ~40 KB; a megabyte is no config
MAX_VALUES = 200_000            # values after aliases expand (the largest paper config: ~10 000)


class InputError(ValueError):
    """A config file that cannot be read as one; the message names the file, the place and the fix."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (YAML says keys are unique; PyYAML
    silently keeps the last)."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue                    # `<<: *base`: the mapping's own keys override the merged ones
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            first = seen[key].start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} given twice (first on line {first.line + 1}): keep one",
                key_node.start_mark)
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def read_bytes(path: Path) -> bytes:
    """The file's bytes: a regular file of at most MAX_BYTES (a device or FIFO would never end)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise InputError(f"{path}: cannot read it: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file: give the path of a YAML config file")
    with path.open("rb") as fh:
        raw = fh.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise InputError(f"{path}: larger than {MAX_BYTES >> 10} KiB: no config is; is it the right file?")
    return raw


def parse(raw: bytes, path: Path | str) -> Any:
    """YAML with unique keys, bounded expansion and finite numbers, or InputError naming where."""
    try:
        data = yaml.load(raw, Loader=_StrictLoader)        # a SafeLoader: constructs no Python objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{where}: not valid YAML: {problem}") from None
    n = expanded_size(data)
    if n > MAX_VALUES:
        raise InputError(f"{path}: its aliases expand to more than {MAX_VALUES} values: write the values out, "
                         "or use fewer nested aliases")
    check_finite(data, str(path))
    return data


def expanded_size(data: Any) -> int:
    """How many values the document holds once every alias is expanded, counted without expanding
    (a shared node's size is computed once), so an alias bomb costs no more than its text."""
    memo: dict[int, int] = {}

    def size(node: Any) -> int:
        if not isinstance(node, dict | list):
            return 1
        key = id(node)
        if key not in memo:
            memo[key] = 1                                   # a cycle counts once, never recurses
            items = list(node.values()) if isinstance(node, dict) else node
            memo[key] = 1 + sum(min(size(v), MAX_VALUES + 1) for v in items)
        return memo[key]

    return size(data)


def check_finite(data: Any, where: str, path: str = "") -> None:
    """Every number finite (YAML's .nan and .inf pass JSON Schema's minimum and maximum)."""
    seen: set[int] = set()

    def walk(node: Any, at: str) -> None:
        if isinstance(node, float) and not math.isfinite(node):
            raise InputError(f"{where}: field '{at or '<top>'}': {node!r} is not a finite number")
        if isinstance(node, dict | list):
            if id(node) in seen:
                return
            seen.add(id(node))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                walk(v, f"{at}[{k}]" if isinstance(node, list) else (f"{at}.{k}" if at else str(k)))

    walk(data, path)
