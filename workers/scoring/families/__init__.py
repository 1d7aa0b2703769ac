"""Label-set families: one module per family, each declaring everything about it in one
`Family` (base.py); `registry` finds them by name and by bundle kind (docs/families.md)."""
