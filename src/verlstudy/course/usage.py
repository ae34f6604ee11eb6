"""The one error every command's bad input becomes: its own module, so the CLI and the commands it hands work to
(run_command) both import it without importing each other."""


class UsageError(Exception):
    """A bad lesson number, parameter or option: one line for the user, exit code 2."""
