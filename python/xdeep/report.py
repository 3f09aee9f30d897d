"""Step times for the daemon, written where the job runs.

The plugin gives each tuned step a private directory on its node and sets
$XDEEP_REPORT to a file in it; when the step ends, the plugin reads the file
as the job's user and sends the times to the daemon with the user's MUNGE
identity, then removes the directory. Nothing goes to the home directory."""
import math
import os


def report_step(seconds):
    """Records one optimizer step's wall time. Only global rank 0 writes (all
    ranks time the same step). Returns True when the time was recorded."""
    try:
        seconds = float(seconds)
    except (TypeError, ValueError):
        raise ValueError(f"report_step wants seconds as a number, not {seconds!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"report_step wants a positive number of seconds, not {seconds}")
    path = os.environ.get("XDEEP_REPORT")
    if not path or os.environ.get("RANK", "0") != "0":
        return False
    with open(path, "a") as f:
        f.write("%.6f\n" % seconds)
    return True
