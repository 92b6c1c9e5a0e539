"""The KVM probe's decision on a PVM host: named, and decided without booting a guest."""
from __future__ import annotations

import pytest

from testbed import vm_kernel, vng
from testbed.vm_kernel import KernelImage


def test_pvm_host_is_refused_with_its_reason_before_any_boot(tmp_path, monkeypatch):
    module = tmp_path / "kvm_pvm"
    module.mkdir()
    monkeypatch.setattr(vm_kernel, "PVM_MODULE", module)

    def no_boot() -> str:
        raise AssertionError("the probe booted a guest on a PVM host")

    monkeypatch.setattr(vng, "binary", no_boot)
    usable, detail = vm_kernel._probe_kvm(KernelImage(path=tmp_path / "vmlinuz", release="6.1.0-0-amd64"), 40)
    assert not usable
    assert "PVM" in detail and str(module) in detail


def test_without_pvm_the_probe_goes_on_to_dev_kvm(tmp_path, monkeypatch):
    monkeypatch.setattr(vm_kernel, "PVM_MODULE", tmp_path / "absent")

    def no_dev_kvm(*_args, **_kwargs) -> int:
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(vm_kernel.os, "open", no_dev_kvm)
    usable, detail = vm_kernel._probe_kvm(KernelImage(path=tmp_path / "vmlinuz", release="6.1.0-0-amd64"), 40)
    assert not usable and detail.startswith("/dev/kvm:")


@pytest.mark.skipif(not vm_kernel.PVM_MODULE.exists(), reason="this host's /dev/kvm is not PVM")
def test_this_machines_pvm_is_named(tmp_path):
    # Decided before the kernel image is looked at: no pinned kernel needed on this machine.
    assert "PVM" in vm_kernel._probe_kvm(KernelImage(path=tmp_path / "vmlinuz", release="6.1.0-0-amd64"), 40)[1]
