"""One module per command of the strawpot command line."""
