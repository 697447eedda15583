import pytest
import torch

from scsparse.nn import flush_denormals
from scsparse.nn._numerics import flushing_denormals


@pytest.mark.parametrize("before", [False, True])
def test_flush_denormals_turns_flushing_on_and_restores_the_previous_setting(before):
    torch.set_flush_denormal(before)
    try:
        with flush_denormals():
            assert flushing_denormals()
            assert (torch.tensor([1e-39]) * 1.0).item() == 0.0
        assert flushing_denormals() is before
        with pytest.raises(RuntimeError), flush_denormals():
            raise RuntimeError("training failed")
        assert flushing_denormals() is before
    finally:
        torch.set_flush_denormal(False)
