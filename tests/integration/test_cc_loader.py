"""Loading BPF congestion controls on the real kernel: registered while a trial holds them,
shared by concurrent trials, unregistered by the last one, swept when a holder was killed, and
never confused with a registration that is not ours."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from cc import bpf_build, loader

pytestmark = pytest.mark.root
NAME = "trp_looptest"


@pytest.fixture
def probe_object():
    obj = bpf_build.build("probe.bpf.c", NAME)
    yield obj
    if NAME in loader.available():          # never leave the test's registration behind
        subprocess.run(["bpftool", "struct_ops", "unregister", "name", NAME], capture_output=True)


def want(obj):
    return {"impl": "bpf", "object": str(obj.path), "sha256": obj.sha256}


def test_registered_while_held_shared_and_unloaded_by_the_last_holder(probe_object):
    assert NAME not in loader.available()
    with loader.holding(NAME, want(probe_object)) as first:
        assert NAME in loader.available()
        assert first["sha256"] == probe_object.sha256 and first["map_id"] > 0
        with loader.holding(NAME, want(probe_object)) as second:
            assert second["map_id"] == first["map_id"]      # shared, not registered twice
        assert NAME in loader.available(), "the first holder still uses it"
    assert NAME not in loader.available()
    assert not any(m["name"] == NAME for m in loader.struct_ops_maps())
    assert loader.loaded_by_us(NAME) is None


def test_a_killed_holder_is_swept(probe_object, tmp_path):
    code = (f"import time, cc.loader as l; from pathlib import Path\n"
            f"with l.holding({NAME!r}, {want(probe_object)!r}):\n"
            f"    Path({str(tmp_path / 'ready')!r}).touch(); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        for _ in range(100):
            if (tmp_path / "ready").exists():
                break
            time.sleep(0.1)
        assert NAME in loader.available()
        proc.kill()
        proc.wait()
        assert NAME in loader.available(), "SIGKILL skips the holder's own unload"
        assert f"congestion control {NAME} (bpf)" in loader.sweep()
        assert NAME not in loader.available()
    finally:
        proc.kill()


def test_a_foreign_registration_of_the_same_name_is_refused_and_kept(probe_object):
    subprocess.run(["bpftool", "struct_ops", "register", str(probe_object.path)], check=True, capture_output=True)
    with (pytest.raises(loader.LoadError, match=f"already registered, not by tcprepro.*unregister name {NAME}"),
          loader.holding(NAME, want(probe_object))):
        pass
    assert loader.sweep() == []
    assert NAME in loader.available(), "not ours: left alone"


def test_a_build_the_kernel_refuses_names_the_cause(tmp_path):
    """An object that is not a congestion control (empty ELF) fails registration with the fix."""
    bogus = tmp_path / "bogus.o"
    subprocess.run(["clang", "-target", "bpf", "-c", "-x", "c", "-", "-o", str(bogus)], input=b"int x;",
                   check=True)
    with (pytest.raises(loader.LoadError, match=r"refused BPF congestion control .*Fix:"),
          loader.holding(NAME, {"impl": "bpf", "object": str(bogus), "sha256": "0" * 64})):
        pass
    assert NAME not in loader.available() and loader.loaded_by_us(NAME) is None
