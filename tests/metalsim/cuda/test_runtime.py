"""metalsim.cuda.runtime's choices made without a GPU: the register cap for occupancy."""

from __future__ import annotations

import pytest

from metalsim.cuda import runtime


@pytest.mark.parametrize(("registers", "threads", "blocks"), [
    (146, 128, 4),    # 152 allocated x 4 warps: 3 blocks, 12 warps; capped for 4 blocks
    (128, 128, 0),    # 4 blocks of 4 warps fit already
    (113, 256, 0),    # 120 x 8 warps: 2 blocks, 16 warps
    (129, 256, 2),    # 136 x 8 warps: 1 block
    (64, 1024, 0),    # the launch bound's own cap: 32 warps
    (255, 32, 16),    # one warp a block: 16 blocks of at most 128 registers
])
def test_registers_are_capped_only_where_fewer_than_16_warps_would_be_resident(
        registers, threads, blocks):
    assert runtime.MIN_RESIDENT_WARPS == 16
    assert runtime.register_capped_blocks(registers, threads) == blocks


def test_no_register_cap_when_the_resident_warp_target_is_zero():
    assert runtime.register_capped_blocks(255, 128, 0) == 0
