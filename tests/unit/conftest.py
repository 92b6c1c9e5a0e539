"""Unit tests see the project's own config, whatever TCPREPRO_* the caller's shell exports."""
import os

import pytest


@pytest.fixture(autouse=True)
def _no_caller_overrides(monkeypatch):
    for key in [k for k in os.environ if k.startswith("TCPREPRO_")]:
        monkeypatch.delenv(key)
