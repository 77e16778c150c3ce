"""Generated Denden stubs (do not edit; run `python proto/generate.py`)."""
