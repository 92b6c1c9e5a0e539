"""The BTF of an installed kernel image, read from its bzImage without booting it.

The BPF congestion controls are compiled against the BTF of the kernel that runs them. Inside the
TCG VM, clang takes half a minute or more per object; on the host it takes a second. The pinned
image's embedded vmlinux carries the same `.BTF` section the booted kernel exposes as
/sys/kernel/btf/vmlinux (byte for byte), so the host can build the VM's objects under the very cache
key the guest looks for (cc/bpf_build.py).
"""
from __future__ import annotations

import lzma
import os
import struct
import zlib
from pathlib import Path

# Compressed payloads a Debian bzImage may carry, by their magic bytes.
_MAGIC = {b"\xfd7zXZ\x00": "xz", b"\x1f\x8b\x08": "gzip"}


class BtfNotFound(RuntimeError):
    """The image holds no readable .BTF section; the message says why."""


def _decompressed(image: bytes) -> bytes:
    """The ELF vmlinux inside a bzImage: the first payload that decompresses to an ELF file."""
    for magic, kind in _MAGIC.items():
        at = image.find(magic)
        while at >= 0:
            try:
                # Both decompressors stop at their stream's end: the image's trailing bytes are no error.
                data = (lzma.LZMADecompressor().decompress(image[at:]) if kind == "xz"
                        else zlib.decompressobj(wbits=31).decompress(image[at:]))
            except (lzma.LZMAError, zlib.error):
                data = b""
            if data[:4] == b"\x7fELF":
                return data
            at = image.find(magic, at + 1)
    raise BtfNotFound("no xz or gzip payload holding an ELF vmlinux")


def elf_section(elf: bytes, wanted: str) -> bytes:
    """The contents of section `wanted` of a little-endian ELF64 file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise BtfNotFound("vmlinux is not a little-endian ELF64 file")
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def header(i: int) -> tuple[int, int, int]:
        name, _, _, _, offset, size, *_ = struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
        return name, offset, size

    names_at = header(shstrndx)[1]
    for i in range(shnum):
        name, offset, size = header(i)
        end = elf.index(b"\0", names_at + name)
        if elf[names_at + name:end].decode() == wanted:
            return elf[offset:offset + size]
    raise BtfNotFound(f"vmlinux has no {wanted} section (a kernel built without CONFIG_DEBUG_INFO_BTF)")


def image_btf(image: Path, cache_dir: Path) -> bytes:
    """The raw BTF of bzImage `image` (what /sys/kernel/btf/vmlinux shows once it boots). Kept in
    `cache_dir` by the image's name, size and mtime: decompressing takes seconds."""
    st = image.stat()
    cached = cache_dir / f".{image.name}-{st.st_size}-{st.st_mtime_ns}.btf"
    if cached.exists():
        return cached.read_bytes()
    btf = elf_section(_decompressed(image.read_bytes()), ".BTF")
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
    tmp.write_bytes(btf)
    tmp.replace(cached)
    return btf
