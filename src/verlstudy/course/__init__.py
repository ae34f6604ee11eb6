"""The course machinery: registry, CLI, runner, twins, student edition, site, plan and verify-upstream.

Nothing but the CLI and the tests imports this package (import-linter checks it)."""
