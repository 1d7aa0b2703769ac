"""Host teams: the organizations that own benchmarks (docs/hosts/teams.md)."""
