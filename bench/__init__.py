"""The benchmark suite: how many agents, how fast, and beside Mesa (``python -m bench``).

Benchmarks measure; the tests never assert timings. See bench/RESULTS.md for the latest
figures and README.md ("Benchmarks") for how to run it.
"""
