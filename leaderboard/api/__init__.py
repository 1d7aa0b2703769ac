"""The JSON API (SPEC "Names and the public API (v1)"): one view per operation."""
