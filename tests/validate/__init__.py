"""Tests of the validate subcommand."""
