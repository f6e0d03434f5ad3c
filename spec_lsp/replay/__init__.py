"""Recorded typing sessions: the session format, the recording proxy, the replayer and its report.

This package talks to the server only over LSP (JSON-RPC over a subprocess's stdio); it imports
neither torch nor pygls, and knows nothing about models.
"""
