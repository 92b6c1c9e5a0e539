"""The BTF of a kernel image read on the host (testbed/kernel_btf.py): from a bzImage's xz or gzip
payload, and from the pinned Debian image itself, whose BTF names the same build directory the
guest's /sys/kernel/btf/vmlinux does (checked in the VM by tests/integration/test_vm_cc.py)."""
from __future__ import annotations

import gzip
import lzma
import struct
from pathlib import Path

import pytest

from testbed import kernel_btf


def elf(sections: dict[str, bytes]) -> bytes:
    """A minimal little-endian ELF64 file holding `sections` (and its section-name table)."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [*sections, ".shstrtab"])
    body, offsets = b"", []
    for data in [*sections.values(), names]:
        offsets.append(64 + len(body))
        body += data
    shoff = 64 + len(body)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack(
        "<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(sections) + 2, len(sections) + 1)
    table = bytes(64)
    name_at = 1
    for (name, data), off in zip([*sections.items(), (".shstrtab", names)], offsets, strict=True):
        table += struct.pack("<IIQQQQIIQQ", name_at, 1, 0, 0, off, len(data), 0, 0, 1, 0)
        name_at += len(name) + 1
    return header + body + table


BTF = b"\x9f\xeb\x01\x00" + bytes(range(200))


@pytest.mark.parametrize("compress", [lzma.compress, gzip.compress], ids=["xz", "gzip"])
def test_the_btf_section_comes_out_of_the_image_payload(tmp_path: Path, compress) -> None:
    image = tmp_path / "vmlinuz-test"
    # a setup stub before the payload and trailing bytes after it, as in a bzImage
    image.write_bytes(b"MZ" + bytes(500) + compress(elf({".text": b"\x90" * 64, ".BTF": BTF})) + bytes(300))
    assert kernel_btf.image_btf(image, tmp_path / "cache") == BTF
    assert kernel_btf.image_btf(image, tmp_path / "cache") == BTF       # from the cache


def test_an_image_without_btf_says_so(tmp_path: Path) -> None:
    image = tmp_path / "vmlinuz-nobtf"
    image.write_bytes(b"MZ" + lzma.compress(elf({".text": b"\x90"})))
    with pytest.raises(kernel_btf.BtfNotFound, match="CONFIG_DEBUG_INFO_BTF"):
        kernel_btf.image_btf(image, tmp_path)
    image.write_bytes(b"MZ not a kernel")
    with pytest.raises(kernel_btf.BtfNotFound, match="no xz or gzip payload"):
        kernel_btf.image_btf(image, tmp_path)


def test_the_pinned_image_carries_btf() -> None:
    from testbed.vm_errors import KernelNotFoundError
    from testbed.vm_kernel import pinned_kernel
    try:
        image = pinned_kernel()
    except KernelNotFoundError as exc:
        pytest.skip(str(exc))
    btf = kernel_btf.elf_section(kernel_btf._decompressed(image.path.read_bytes()), ".BTF")
    assert btf[:2] == b"\x9f\xeb"          # BTF_MAGIC, little endian
