"""How many examples a property test draws. `make test` (the fast tier) draws a quarter of the
count a test names; `make test-slow` runs the property tests again with the whole count
(LAYA_PROPERTY_EXAMPLES=full), so CI still walks every example the test asks for."""
from __future__ import annotations

import os

import pytest

FULL = os.environ.get("LAYA_PROPERTY_EXAMPLES") == "full"

# the property tests are in both tiers: run whole by `make test-slow` (-m "slow or property")
property_test = pytest.mark.property


def examples(count: int) -> int:
    return count if FULL else max(20, count // 4)
