"""`python -m tcprepro`: see tcprepro/cli.py."""
import sys

from tcprepro.cli import main

sys.exit(main())
