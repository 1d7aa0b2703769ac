"""Client of the evalserver API: the `evalserver-client` command and `Client` for Python.

    from evalserver_client import Client
    Client().submit("cifar10", "resnet50", {"cifar10-test": predictions})

`cli` is the command, `client.Client` the Python API, `api.Api` the HTTP layer (requests),
`config` where the URL and token come from, `errors` the failures and their exit codes.
"""

__version__ = "0.2.0"  # the one place: pyproject.toml reads it (tool.setuptools.dynamic)

from .client import Client  # noqa: E402
from .errors import ClientError  # noqa: E402

__all__ = ["Client", "ClientError", "__version__"]
