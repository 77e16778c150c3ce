"""strawpot: a package manager and launcher for AI-agent components."""

__version__ = "0.2.0"
