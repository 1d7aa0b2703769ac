"""Command-line client of the evalserver API; the Python standard library only.

`evalserver_client.cli` is the `evalserver-client` command; `evalserver_client.api` the HTTP
layer (`Api`, `ClientError`) it uses, which can also be used from Python.
"""

__version__ = "0.1.0"
