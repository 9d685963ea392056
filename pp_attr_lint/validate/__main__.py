"""``python -m pp_attr_lint.validate ...``: the validate subcommand on its own."""

import argparse
import sys

from . import add_arguments, run


def main(argv=None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and return :func:`run`'s exit status."""
    from ..textio import tolerant_streams

    tolerant_streams()
    parser = argparse.ArgumentParser(prog="pp-attr-lint validate",
                                     description="Instantiate Qwen3-VL models under real pipeline parallelism.")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
