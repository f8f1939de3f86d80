"""pytest plugin (registered by this package): the `metalsim_patch` fixture."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from metalsim.patch import patch


@pytest.fixture
def metalsim_patch() -> Iterator[patch]:
    """Run the test with `mx.fast.metal_kernel` simulated wherever MLX has no Metal back end."""
    with patch() as active:
        yield active
