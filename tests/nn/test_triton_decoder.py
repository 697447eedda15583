"""The Triton kernels of the masked decoder, checked on the CPU in Triton's interpreter (skipped without Triton).

The checks (``triton_interpreter_checks.py``) run in a fresh process started with ``TRITON_INTERPRET=1``: Triton
builds its own helpers for the interpreter when it is first imported, and a CUDA build of torch can import Triton
before any test runs.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")
def test_triton_kernels_against_autograd_in_the_interpreter():
    checks = Path(__file__).with_name("triton_interpreter_checks.py")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(checks)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "7 passed" in result.stdout, result.stdout[-2000:]  # every check ran, none skipped
