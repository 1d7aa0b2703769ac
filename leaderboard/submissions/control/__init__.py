"""A participant controls their submissions: withdraw one (a maintainer too, with a reason),
cancel one still queued, run again one that failed through the server's fault (docs/api.md
§6.5)."""
