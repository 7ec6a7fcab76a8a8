"""Benchmarks of agentloop against a hand-written floor and its peers; see README.md."""
