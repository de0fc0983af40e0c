import opendp.prelude as dp
import pytest

dp.enable_features("contrib", "idealized-numerics")


@pytest.fixture(autouse=True)
def _contrib():
    dp.enable_features("contrib", "idealized-numerics")
    yield
