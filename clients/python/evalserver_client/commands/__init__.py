"""The commands of `evalserver-client`, one function each: `(client, args) -> exit status`."""
