"""The loop's contract over arbitrary runs: scripts, tools, interventions, policies.

Each example is one scenario run through one entry point (``run_loop``, ``agent_loop`` or
``Agent``) on both backends; every invariant of ``checks.check_all`` is checked on each run:
the lifecycle grammar, AgentEnd = committed messages = result, pairing of calls and results,
usage and cost sums, no live task after the run, no follow-up polled after an error or abort,
steering and follow-ups conserved, and abort bounded.
"""

from __future__ import annotations

from hypothesis import given, note, strategies as st

from .checks import check_all
from .profiles import CONFORMANCE
from .runner import ENTRIES, Entry, perform_sync
from .strategies import Scenario, scenarios

BACKENDS = ("asyncio", "trio")


def _check_on_both_backends(scenario: Scenario, entry: Entry) -> None:
    for backend in BACKENDS:
        note(f"backend: {backend}")
        check_all(perform_sync(scenario, entry, backend))


@CONFORMANCE
@given(scenario=scenarios(), entry=st.sampled_from(ENTRIES))
def test_every_run_keeps_the_contract(scenario: Scenario, entry: Entry) -> None:
    """Any script (answers and broken calls), interventions and policies."""
    _check_on_both_backends(scenario, entry)


@CONFORMANCE
@given(scenario=scenarios(batches=True), entry=st.sampled_from(ENTRIES))
def test_runs_with_tool_batches_keep_the_contract(scenario: Scenario, entry: Entry) -> None:
    """Every other model call asks for a batch of valid calls: steering interrupts, aborts
    mid-batch, shielded and long tools, updates."""
    _check_on_both_backends(scenario, entry)
