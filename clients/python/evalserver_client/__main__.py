"""`python -m evalserver_client ...`: the same as the `evalserver-client` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
