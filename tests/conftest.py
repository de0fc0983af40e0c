import os

# OpenDP captures a Rust backtrace for every error when RUST_BACKTRACE is set (about 0.1 s an
# error); the malformed-input suites raise thousands.  RUST_LIB_BACKTRACE takes precedence for
# library errors (panics still follow RUST_BACKTRACE); set it before OpenDP raises anything.
os.environ.setdefault("RUST_LIB_BACKTRACE", "0")

import opendp.prelude as dp  # noqa: E402
import pytest  # noqa: E402

dp.enable_features("contrib", "idealized-numerics")


@pytest.fixture(autouse=True)
def _contrib():
    dp.enable_features("contrib", "idealized-numerics")
    yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the tests marked ``slow`` first (stable order otherwise).

    pytest-xdist hands tests out in collection order; a 50 s benchmark smoke run collected last
    leaves one core idle while it finishes.  Starting the long ones first balances the workers.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
