"""The sandbox: walls a confined process lives in and the mechanisms (bubblewrap) that build them.

A leaf below the orchestrator and the install scripts: it imports `strawpot.model` and the standard library only.
"""
