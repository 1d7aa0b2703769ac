"""The scoring core: plain NumPy/SciPy, no Django.

Everything the server reports about a submission is computed here, and the local
command (`python -m workers.score`) calls exactly the same functions.
"""
