"""The errors of evaluation, under ``agentloop.AgentError``::

    AgentError
    └── EvalError             anything this package raises
        ├── SuiteError        a suite or case file that cannot be read or does not fit
        ├── CassetteError     a cassette file that cannot be read or written
        └── ReportError       a report file that cannot be read

A case that fails, or that could not run (a provider outage, a cassette with no answer for a
request, a timeout), is not an exception: it is a run with status ``failed`` or ``error`` in
the report.
"""

from __future__ import annotations

from agentloop import AgentError

__all__ = ["CassetteError", "EvalError", "ReportError", "SuiteError"]


class EvalError(AgentError):
    """Base class of the errors this package raises."""


class SuiteError(EvalError):
    """A suite or case file that cannot be read, or whose content does not fit."""


class CassetteError(EvalError):
    """A cassette file that cannot be read or written."""


class ReportError(EvalError):
    """A report file that cannot be read."""
