"""The demo data that `manage.py seed_demo` (leaderboard/management/commands/seed_demo.py)
adds to a fresh server: the built-in benchmarks' real CIFAR-10 models and one model of each
other benchmark (`seeding`), and the hidden demo benchmark with its participants
(`hidden_benchmark`). Above every domain: only the command (and the tests) import it."""
