"""run_plan's pricing of the moves it makes: each value priced at its own dtype's itemsize."""
from __future__ import annotations

import pytest
import torch

from ctshard._run import _priced_steps


@pytest.mark.parametrize("dtype, itemsize", [(torch.float8_e4m3fn, 1), (torch.uint16, 2), (torch.complex32, 4), (torch.float64, 8)])
def test_priced_steps_use_the_tensors_own_itemsize(dtype, itemsize):
    # run_plan prices a move by the value's own dtype: an all-gather of a [64, 64] tensor moves
    # 64 * 64 * itemsize bytes whatever the dtype (float8 used to be priced as float32)
    meta = torch.empty(64, 64, dtype=dtype, device="meta")
    steps = _priced_steps(meta, [2], "S(0)", "R", {"devices_per_host": 8})
    assert [(s["collective"], s["bytes"]) for s in steps] == [("all_gather", 64 * 64 * itemsize)]


def test_priced_steps_name_a_dtype_ctshard_does_not_know():
    meta = torch.empty(64, 64, dtype=torch.float8_e8m0fnu, device="meta")
    with pytest.raises(ValueError, match="float8_e8m0fnu"):
        _priced_steps(meta, [2], "S(0)", "R", {"devices_per_host": 8})
