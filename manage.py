#!/usr/bin/env python
"""Django's command-line utility for TLS Audit."""
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tlsaudit.settings")
    from tlsaudit.core.standalone import run_standalone, runs_standalone

    if runs_standalone(sys.argv):  # audit/loadtest/overhead/handshakes: no app registry needed
        run_standalone(sys.argv)
        return
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
