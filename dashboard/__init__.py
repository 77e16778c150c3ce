"""`strawpot ui`: the local web app over a project's run folders (reads what the orchestrator writes)."""
