"""ringo's benchmark driver: `python3 -m bench.driver --help` from the repository's root."""
