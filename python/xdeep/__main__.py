"""python3 -m xdeep emit FORMAT [--decision FILE]: the decision of this job
for a framework (the same text as `xdeep emit`)."""
import argparse
import sys

from .decision import DecisionError, decision
from .frameworks import FORMATS, emit


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m xdeep")
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("emit", help="the decision as json, torchrun, deepspeed, megatron, "
                                    "lightning or accelerate settings")
    e.add_argument("format", choices=FORMATS)
    e.add_argument("--decision", help="the decision file (default: $XDEEP_DECISION_FILE)")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(emit(args.format, decision(args.decision)))
    except (DecisionError, ValueError) as e:
        print(f"xdeep: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
