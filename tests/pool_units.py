"""Units for the local pool's tests, importable by its spawned workers."""

import os
import sys


def unit(x):
    """Twice ``x``; ``"exit"`` ends its process as ``os._exit`` does, ``"sysexit"`` calls
    ``sys.exit`` (what a misbehaving plugin claim may do)."""
    if x == "exit":
        os._exit(7)
    if x == "sysexit":
        sys.exit("a plugin said goodbye")
    return x * 2
