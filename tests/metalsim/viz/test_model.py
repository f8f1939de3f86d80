"""The drawing model's index arithmetic, against numpy's."""

import math

import numpy as np
import pytest

from metalsim.viz.model import logical_index


@pytest.mark.parametrize("shape", [(4,), (3, 5), (2, 3, 4), (7, 1, 3)])
def test_logical_index_is_numpys_row_major_index(shape):
    for element in range(math.prod(shape)):
        assert logical_index(shape, element) == tuple(
            int(i) for i in np.unravel_index(element, shape))


def test_an_element_outside_the_buffer_keeps_its_flat_index():
    assert logical_index((3, 5), 15) == (15,)
    assert logical_index((3, 5), -1) == (-1,)
    assert logical_index((), 2) == (2,)
