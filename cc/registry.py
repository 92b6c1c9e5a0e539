"""Resolve a paper's congestion-control name to what serves it on the running kernel.

Order of preference: builtin (the kernel lists it), loadable module (loaded with the papers'
parameters), BPF struct_ops object built from cc/bpf/ (LEDBAT always; H-TCP and Westwood+ where the
module is missing). A flow may force one implementation (e.g. BPF H-TCP beside the module) and may
override a BPF algorithm's parameters; an override gets its own kernel name, so two parameter sets
can run side by side. `provide()` loads what is needed for a trial and unloads it afterwards
(cc/loader.py); names with no implementation here fail with the missing feature and the fix.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cc import bpf_build, loader
from configuration import CHECKOUT

REGISTRY_PATH = CHECKOUT / "config" / "congestion_controls.yaml"
IMPLS = ("builtin", "module", "bpf")


class CcUnavailable(RuntimeError):
    """The kernel cannot provide this congestion control; the message says what is missing."""


@dataclass(frozen=True)
class CcChoice:
    name: str                      # registry name, e.g. ledbat-md-nf2
    kernel_name: str               # what the socket asks for (iperf3 -C)
    impl: str                      # builtin | module | bpf
    params: dict[str, Any] = field(default_factory=dict)
    object_sha256: str | None = None
    source: str | None = None
    notes: tuple[str, ...] = ()

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "impl": self.impl, "kernel_name": self.kernel_name,
                               "params": self.params, "object_sha256": self.object_sha256}
        if self.source:
            out["source"] = self.source
        if self.notes:
            out["notes"] = list(self.notes)
        return out


SCHEMA_PATH = CHECKOUT / "config" / "schema" / "congestion_controls.schema.yaml"


def registry(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The registry, validated: a bad field is named with its path."""
    path = path or REGISTRY_PATH
    return _load_registry(path, path.stat().st_mtime_ns)


VALIDATED_DIR = Path("/run/tcprepro/validated")


@functools.lru_cache(maxsize=4)
def _load_registry(path: Path, _mtime: int) -> dict[str, dict[str, Any]]:
    text, schema_text = path.read_text(), SCHEMA_PATH.read_text()
    data = yaml.safe_load(text)
    # Validation costs seconds under QEMU TCG (jsonschema's imports), once per trial process; a
    # registry that passed on this boot is remembered by content hash.
    stamp = VALIDATED_DIR / hashlib.sha256((text + "\0" + schema_text).encode()).hexdigest()
    if stamp.exists():
        return data
    # deferred: jsonschema is slow to import, and only validation needs it
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(yaml.safe_load(SCHEMA_PATH.read_text())).iter_errors(data),
                    key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(map(str, errors[0].absolute_path)) or "(top level)"
        raise CcUnavailable(f"{path} at {where}: {errors[0].message}")
    with contextlib.suppress(OSError):
        VALIDATED_DIR.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    return data


def entry(name: str, module_params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The registry's entry of `name`, its module_params updated by `module_params` (a trial's
    override: the lanes' cross-validation runs the references' H-TCP)."""
    reg = registry()
    if name not in reg:
        raise CcUnavailable(f"unknown congestion control {name!r}: known are {', '.join(reg)} "
                            f"(config/congestion_controls.yaml)")
    if not module_params:
        return reg[name]
    unknown = sorted(set(module_params) - set(reg[name].get("module_params") or {}))
    if unknown:
        raise CcUnavailable(f"{name}: no module parameter {', '.join(unknown)} in config/congestion_controls.yaml")
    return {**reg[name], "module_params": {**reg[name]["module_params"], **module_params}}


def boot_params(module_params: dict[str, dict[str, Any]]) -> list[str]:
    """A trial's module parameters (spec["module_params"]: {cc: {param: value}}) as kernel command
    line arguments, `module.param=value`: a kernel that has the algorithm built in then has the
    values before the algorithm registers (CUBIC derives its TCP-friendly slope from beta there)."""
    out = []
    for cc, params in sorted(module_params.items()):
        module = entry(cc, params).get("module")
        if not module:
            raise CcUnavailable(f"{cc}: module parameters {', '.join(params)} but no module in "
                                f"config/congestion_controls.yaml")
        out += [f"{module}.{k}={int(v)}" for k, v in sorted(params.items())]
    return out


def read_at_register(module_params: dict[str, dict[str, Any]]) -> list[str]:
    """Of a trial's module parameters ({cc: {param: value}}), those its algorithm reads only when it
    registers (the registry's read_at_register), as `module.param`: a kernel must boot with them."""
    out = []
    for cc, params in sorted(module_params.items()):
        e = entry(cc, params)
        out += [f"{e.get('module', cc)}.{k}" for k in sorted(params) if k in (e.get("read_at_register") or [])]
    return out


def target_ms(name: str) -> float | None:
    """A delay-based algorithm's queueing-delay target (target_ms of its BPF parameters: the LEDBAT
    variants); None for a loss-based one."""
    target = ((entry(name).get("bpf") or {}).get("params") or {}).get("target_ms")
    return None if target is None else float(target)


def available() -> set[str]:
    return loader.available()


def modules_loadable() -> bool:
    """A kernel built without module support has no /proc/modules."""
    return Path("/proc/modules").exists()


def _module_file(module: str, release: str) -> Path | None:
    """The module's file, from depmod's index (walking /lib/modules costs ~15 s over the VM's 9p)."""
    return _module_index(release).get(module.replace("-", "_"))


@functools.lru_cache(maxsize=4)
def _module_index(release: str) -> dict[str, Path]:
    root = Path(f"/lib/modules/{release}")
    dep = root / "modules.dep"
    if not dep.exists():
        return {}
    index = {}
    for line in dep.read_text().splitlines():
        rel = line.split(":", 1)[0]
        name = Path(rel).name.split(".ko", 1)[0].replace("-", "_")
        index[name] = root / rel
    return index


def running_release() -> str:
    return Path("/proc/sys/kernel/osrelease").read_text().strip()


def _bpf_tools_missing() -> list[str]:
    return [t for t in ("clang", "bpftool") if not shutil.which(t)]


def _config_has(release: str, *symbols: str) -> bool:
    config = Path(f"/boot/config-{release}")
    text = config.read_text() if config.exists() else ""
    return all(f"{s}=y" in text for s in symbols)


BPF_KERNEL_SYMBOLS = ("CONFIG_BPF_SYSCALL", "CONFIG_BPF_JIT", "CONFIG_DEBUG_INFO_BTF")


def options(name: str, release: str | None = None, module_params: dict[str, Any] | None = None) -> dict[str, str]:
    """{impl: detail} for each implementation that can serve `name` on the running kernel (or,
    statically, on an installed kernel `release`), without loading anything. BPF is judged by its
    prerequisites here; `doctor` really registers one."""
    e = entry(name, module_params)
    running = running_release()
    static = bool(release) and release != running
    release = release or running
    found: dict[str, str] = {}
    kname, module = e.get("kernel_name"), e.get("module")
    wanted = set(e.get("module_params") or {})
    if kname:
        if static:
            if e.get("builtin") or _config_has(release, f"CONFIG_TCP_CONG_{kname.upper()}"):
                found["builtin"] = f"built into {release}"
        elif (kname in available() and not loader.loaded_by_us(kname) and not _is_loaded_module(module)
              and wanted <= _builtin_param_names(module)):
            found["builtin"] = f"{kname} listed by the kernel"
        ko = _module_file(module, release) if module else None
        if module and (static or modules_loadable()) and ko and wanted <= _ko_param_names(ko):
            found["module"] = f"module {module} of {release}"
        elif module and not static and _is_loaded_module(module) and wanted <= _builtin_param_names(module):
            found["module"] = f"module {module} loaded"
    if e.get("bpf") and (bpf_build.SOURCES / e["bpf"]["source"]).exists() and not _bpf_tools_missing():
        btf_ok = _config_has(release, *BPF_KERNEL_SYMBOLS) if static else bpf_build.KERNEL_BTF.exists()
        if btf_ok:
            found["bpf"] = f"BPF struct_ops from cc/bpf/{e['bpf']['source']}"
    return found


def how_available(name: str, release: str | None = None) -> tuple[str | None, str]:
    """(preferred impl or None, detail)."""
    found = options(name, release)
    for impl in IMPLS:
        if impl in found:
            return impl, found[impl]
    return None, why_not(name, release)


def _builtin_param_names(module: str | None) -> set[str]:
    """Parameters a built-in (or loaded) algorithm takes, as sysfs lists them."""
    d = Path(f"/sys/module/{module}/parameters") if module else None
    return {p.name for p in d.iterdir()} if d and d.is_dir() else set()


@functools.lru_cache(maxsize=16)
def _ko_param_names(ko: Path) -> set[str]:
    """Parameters a module file takes (its modinfo), without loading it."""
    try:
        out = subprocess.run(["modinfo", "-F", "parm", str(ko)], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.split(":", 1)[0] for line in out.splitlines() if ":" in line}


def why_not(name: str, release: str | None) -> str:
    e = entry(name)
    release = release or running_release()
    parts = []
    if e.get("kernel_name"):
        parts.append(f"{e['kernel_name']} not built into {release}")
        if e.get("module"):
            parts.append(f"no module {e['module']}" + ("" if modules_loadable() else " (no module support)"))
        if e.get("module_params"):
            parts.append(f"or its kernel implementation lacks a parameter of {', '.join(e['module_params'])}")
    if e.get("bpf"):
        missing = _bpf_tools_missing()
        parts.append(f"BPF needs {', '.join(missing)} (make deps)" if missing else
                     f"BPF needs a kernel with {', '.join(BPF_KERNEL_SYMBOLS)}")
    return "; ".join(parts)


def _is_loaded_module(module: str | None) -> bool:
    """Loadable modules have an initstate in sysfs; built-in ones with parameters do not."""
    return bool(module) and Path(f"/sys/module/{module}/initstate").exists()


def bpf_params(name: str, overrides: dict[str, Any] | None = None) -> tuple[str, dict[str, int]]:
    """(kernel name, -D macros) of `name`'s BPF object with `overrides` applied. Defaults keep the
    registry's kernel name; any override gets `<prefix>_<hash>` so it never collides."""
    spec = entry(name).get("bpf")
    if not spec:
        raise CcUnavailable(f"{name} has no BPF implementation in config/congestion_controls.yaml")
    params = {k.lower(): v for k, v in (spec.get("params") or {}).items()}
    unknown = sorted(set(overrides or {}) - set(params))
    if unknown:
        raise CcUnavailable(f"{name}: unknown parameter(s) {', '.join(unknown)}; {name} takes "
                            f"{', '.join(sorted(params)) or 'none'} (config/congestion_controls.yaml)")
    merged = {**params, **(overrides or {})}
    for key, value in merged.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise CcUnavailable(f"{name}: parameter {key}={value!r} must be an integer (BPF has no floating point; "
                                "fractions are given in permille, e.g. beta_permille: 600)")
    kernel_name = spec["kernel_name"]
    if merged != params:
        digest = hashlib.sha256(json.dumps(merged, sort_keys=True).encode()).hexdigest()[:8]
        kernel_name = f"{kernel_name[:6]}_{digest}"
    return kernel_name, {k.upper(): v for k, v in merged.items()}


@contextlib.contextmanager
def provide(name: str, params: dict[str, Any] | None = None, impl: str | None = None,
            module_params: dict[str, Any] | None = None) -> Iterator[CcChoice]:
    """Make `name` usable for the block (loading and, at the end, unloading what it needed) and
    say how. `impl` forces one implementation; `params` override a BPF algorithm's parameters,
    `module_params` the registry's parameters of its kernel implementation."""
    e = entry(name, module_params)
    if impl is not None and impl not in IMPLS:
        raise CcUnavailable(f"{name}: implementation {impl!r} is not one of {', '.join(IMPLS)}")
    if params and impl is None:
        impl = "bpf"                          # only BPF objects take per-trial parameters
    found = options(name, module_params=module_params)
    chosen = impl or next((i for i in IMPLS if i in found), None)
    if chosen is None or chosen not in found:
        what = f"as {chosen}" if chosen else "here"
        raise CcUnavailable(f"congestion control {name!r} unavailable {what}: {why_not(name, None)}. Fix: run on a "
                            f"kernel that has it (the workflow's VM runs the pinned Debian kernel); "
                            f"`python -m tcprepro doctor` shows what this kernel has")
    if chosen == "builtin":
        _set_builtin_params(name, e)
        source = f"{e['kernel_wrapper']} (built in)" if e.get("kernel_wrapper") else None
        yield CcChoice(name, e["kernel_name"], "builtin", _builtin_params(e), source=source, notes=_absent_notes(e))
        return
    if chosen == "module":
        want = {"impl": "module", "module": e["module"], "params": dict(e.get("module_params") or {})}
        try:
            with loader.holding(e["kernel_name"], want):
                yield CcChoice(name, e["kernel_name"], "module", _read_module_params(e["module"], want["params"]),
                               object_sha256=_file_sha256(_module_file(e["module"], running_release())))
        except loader.LoadError as exc:
            raise CcUnavailable(str(exc)) from None
        return
    kernel_name, defines = bpf_params(name, params)
    try:
        obj = bpf_build.build(e["bpf"]["source"], kernel_name, defines)
    except bpf_build.BuildError as exc:
        raise CcUnavailable(f"building BPF {name}: {exc}") from None
    want = {"impl": "bpf", "object": str(obj.path), "sha256": obj.sha256}
    try:
        with loader.holding(kernel_name, want):
            yield CcChoice(name, kernel_name, "bpf", {k.lower(): v for k, v in defines.items()},
                           object_sha256=obj.sha256, source=f"cc/bpf/{obj.source}")
    except loader.LoadError as exc:
        raise CcUnavailable(str(exc)) from None


def _file_sha256(path: Path | None) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path else None


def _builtin_params(e: dict[str, Any]) -> dict[str, Any]:
    """A builtin's parameters as the kernel has them; a built-in kernel wrapper's, as compiled (the
    registry's bpf.params, which the UML kernel's cache key covers)."""
    if e.get("kernel_wrapper"):
        return dict((e.get("bpf") or {}).get("params") or {})
    module = e.get("module")
    wanted = dict(e.get("module_params") or {})
    return _read_module_params(module, wanted) if module and wanted else {}


def _set_builtin_params(name: str, e: dict[str, Any]) -> None:
    """A built-in algorithm takes the registry's module_params through sysfs (a module would take them
    at load). Left set: every trial on this kernel asks for the same values."""
    module, wanted = e.get("module"), dict(e.get("module_params") or {})
    for key, want in wanted.items():
        f = Path(f"/sys/module/{module}/parameters/{key}")
        value = str(int(want) if isinstance(want, bool) else want)
        try:
            if f.read_text().strip() != value:
                f.write_text(value)
        except OSError as exc:
            raise CcUnavailable(f"built-in {name} needs {module}.{key}={value} ({f}: {exc}). Fix: boot with "
                                f"{module}.{key}={value} on the kernel command line, or run as root") from None


def _absent_notes(e: dict[str, Any]) -> tuple[str, ...]:
    return tuple(e.get("paper_params_absent", {}).values()) if e.get("paper_params_absent") else ()


def _read_module_params(module: str, wanted: dict[str, Any]) -> dict[str, Any]:
    """The values the kernel really has, so provenance records facts, not intentions."""
    out: dict[str, Any] = {}
    for key, want in wanted.items():
        f = Path(f"/sys/module/{module}/parameters/{key}")
        out[key] = f.read_text().strip() if f.exists() else f"absent (wanted {want})"
    return out


def bpf_object_for(name: str, release: str, params: dict[str, Any] | None = None, impl: str | None = None,
                   module_params: dict[str, Any] | None = None) -> tuple[str, str, dict[str, int]] | None:
    """(source, kernel name, -D macros) of the BPF object `provide` will want for `name` on another
    installed kernel `release` (the VM's), judged statically as `provide` judges the running one;
    None where it will choose a built-in or a module."""
    if params and impl is None:
        impl = "bpf"
    chosen = impl or next((i for i in IMPLS if i in options(name, release, module_params)), None)
    if chosen != "bpf":
        return None
    kernel_name, defines = bpf_params(name, params)
    return entry(name, module_params)["bpf"]["source"], kernel_name, defines
