"""Ready-made policies for agentloop's four policy slots and approval hook.

=======================  ==============  ====================================================
policy                   slot            what it does
=======================  ==============  ====================================================
``MaxTurns``             pre-turn        stops a run after N turns
``Budget``               pre-turn        stops a run past a token or cost limit
``ToolDenyList``         pre-dispatch    skips calls to tools matching names or globs
``ToolAllowList``        pre-dispatch    skips calls to tools matching none of them
``Sandbox``              pre-dispatch    skips calls naming a file outside the roots
``LoopDetection``        post-turn       nudges, then stops, a model repeating a call
``PromptInjectionGuard`` post-turn       redacts (or flags, or stops on) injected orders
``PiiRedactor``          post-turn       redacts personal data and secrets in tool results
``AuditLogger``          event callback  one JSON line per model call, tool call, verdict
``ApprovalGate``         approval hook   enabled / smart / bypassed modes, session trust
``RecommendedPolicies``  all             budget, turn limit, deny list and sandbox bundled
=======================  ==============  ====================================================

This package imports only ``agentloop`` and the standard library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Names are found lazily: the coding agent's command needs approval and limits, not the
# injection guard's tables (start-up time).
if TYPE_CHECKING:
    from ._approval import (
        ALWAYS_ALLOW as ALWAYS_ALLOW,
        AlwaysAllow as AlwaysAllow,
        ApprovalAnswer as ApprovalAnswer,
        ApprovalGate as ApprovalGate,
        ApprovalMode as ApprovalMode,
        AskFn as AskFn,
    )
    from ._audit import AuditLogger as AuditLogger, WatchedPolicy as WatchedPolicy
    from ._injection import (
        INJECTION_RULES as INJECTION_RULES,
        InjectionClassifier as InjectionClassifier,
        PromptInjectionGuard as PromptInjectionGuard,
    )
    from ._limits import Budget as Budget, MaxTurns as MaxTurns, tokens_of as tokens_of
    from ._loop_detection import DEFAULT_NUDGE as DEFAULT_NUDGE, LoopDetection as LoopDetection
    from ._pii import (
        PiiRedactor as PiiRedactor,
        luhn_valid as luhn_valid,
        rewrite_results as rewrite_results,
    )
    from ._recommended import (
        DEFAULT_DENIED as DEFAULT_DENIED,
        RecommendedPolicies as RecommendedPolicies,
    )
    from ._sandbox import (
        NOT_PATH_FORMATS as NOT_PATH_FORMATS,
        PATH_FORMATS as PATH_FORMATS,
        Sandbox as Sandbox,
    )
    from ._tool_filter import (
        ToolAllowList as ToolAllowList,
        ToolDenyList as ToolDenyList,
        ToolPatterns as ToolPatterns,
    )

__all__ = [
    "ALWAYS_ALLOW",
    "DEFAULT_DENIED",
    "DEFAULT_NUDGE",
    "INJECTION_RULES",
    "NOT_PATH_FORMATS",
    "PATH_FORMATS",
    "AlwaysAllow",
    "ApprovalAnswer",
    "ApprovalGate",
    "ApprovalMode",
    "AskFn",
    "AuditLogger",
    "Budget",
    "InjectionClassifier",
    "LoopDetection",
    "MaxTurns",
    "PiiRedactor",
    "PromptInjectionGuard",
    "RecommendedPolicies",
    "Sandbox",
    "ToolAllowList",
    "ToolDenyList",
    "ToolPatterns",
    "WatchedPolicy",
    "luhn_valid",
    "rewrite_results",
    "tokens_of",
]

_WHERE: dict[str, str] = {
    "ALWAYS_ALLOW": "._approval",
    "AlwaysAllow": "._approval",
    "ApprovalAnswer": "._approval",
    "ApprovalGate": "._approval",
    "ApprovalMode": "._approval",
    "AskFn": "._approval",
    "AuditLogger": "._audit",
    "WatchedPolicy": "._audit",
    "INJECTION_RULES": "._injection",
    "InjectionClassifier": "._injection",
    "PromptInjectionGuard": "._injection",
    "Budget": "._limits",
    "MaxTurns": "._limits",
    "tokens_of": "._limits",
    "DEFAULT_NUDGE": "._loop_detection",
    "LoopDetection": "._loop_detection",
    "PiiRedactor": "._pii",
    "luhn_valid": "._pii",
    "rewrite_results": "._pii",
    "DEFAULT_DENIED": "._recommended",
    "RecommendedPolicies": "._recommended",
    "NOT_PATH_FORMATS": "._sandbox",
    "PATH_FORMATS": "._sandbox",
    "Sandbox": "._sandbox",
    "ToolAllowList": "._tool_filter",
    "ToolDenyList": "._tool_filter",
    "ToolPatterns": "._tool_filter",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
