"""Shared fixtures: where the third-party data lives.

The data in ``../shared/data`` (beside the project) is read in place, never
copied. Set ``CONTEXTWINDOW_DATA`` to point elsewhere. Under CI (``CI=true``) a
missing data folder is an error, not a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from tests.llama import llama_server  # noqa: F401 -- the fixture, for every test
from tests.servers import postgres_server, redis_server  # noqa: F401 -- the same

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTWINDOW_DATA", ROOT.parent / "shared" / "data"))


def data_dir() -> Path:
    """Return the shared data folder, or skip (fail under CI) when absent."""
    if not (DATA / "tau-bench_gpt-4o-airline.json").exists():
        msg = f"shared data not found at {DATA} (set CONTEXTWINDOW_DATA)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder holding locomo10.json, the tau-bench file and Claude Code sessions."""
    return data_dir()


# -- hypothesis profiles ----------------------------------------------------------
# "ci" when the CI environment variable is set (CI=true), else "dev". CI is
# derandomized (as hypothesis's own CI profile is): a run that passes under
# CI=true here passes in CI, and a failure there is reproduced here exactly;
# new examples are explored by the random dev runs. 1,000 examples: each
# pool-based invariant then checks 1,000 conversations, some 120,000 fits
# in all, and the whole suite stays well inside CI's time on 2 cores.
settings.register_profile(
    "ci",
    max_examples=1000,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=200)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
