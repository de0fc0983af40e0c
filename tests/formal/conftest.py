from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.formal.extracted import Maps, require_binary


@pytest.fixture(scope="module")
def maps() -> Iterator[Maps]:
    m = Maps(require_binary())
    yield m
    m.close()
