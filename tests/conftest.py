import opendp.prelude as dp
import pytest

dp.enable_features("contrib")


@pytest.fixture(autouse=True)
def _contrib():
    dp.enable_features("contrib")
    yield
