#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lindy.settings")
    from django.core.management import execute_from_command_line

    from lindy.env import exit_on_bad_settings

    exit_on_bad_settings()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
