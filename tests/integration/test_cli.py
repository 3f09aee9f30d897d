"""The xdeep command line as a user and an admin meet it, against the stack's
real xdeepd: tables that fit the terminal, --json that parses and agrees with
the table, pictures drawn by gnuplot, --version everywhere, help, presets,
deadlines in Slurm's format, and one clear line when something is wrong."""
import json
import os
import re
import unittest

from harness import BUILD, SOURCE, STACK, WORKLOADS, StackTest, run

XDEEP = os.path.join(BUILD, "daemon", "xdeep")
XDEEPD = os.path.join(BUILD, "daemon", "xdeepd")
PROBE = os.path.join(BUILD, "profiler", "xdeep-probe")
ADMIT = os.path.join(BUILD, "spank_plugin", "xdeep-admit")
STEP_REPORT = os.path.join(BUILD, "spank_plugin", "xdeep-step-report")
GPT = os.path.join(WORKLOADS, "gpt-125m.toml")


def daemon():
    return f"unix://{STACK}/xdeepd.sock"


def xdeep(*args, env=None, timeout=60):
    full = {"XDEEP_DAEMON": daemon(), "COLUMNS": ""}
    full.update(env or {})
    return run([XDEEP, *args], env=full, timeout=timeout)


def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        return re.search(r"project\(xdeep VERSION ([0-9.]+)", f.read()).group(1)


class VersionAndHelpTest(StackTest):
    def test_every_binary_has_version(self):
        for binary, name in ((XDEEP, "xdeep"), (XDEEPD, "xdeepd"), (PROBE, "xdeep-probe"),
                             (ADMIT, "xdeep-admit"), (STEP_REPORT, "xdeep-step-report")):
            r = run([binary, "--version"])
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(r.out.strip(), f"{name} {project_version()}", r)

    def test_bare_xdeep_prints_help(self):
        r = run([XDEEP])
        self.assertEqual(r.rc, 0, r)
        for command in ("plan", "budget", "history", "presets", "help", "status"):
            self.assertIn(command, r.out)
        self.assertEqual(r.err, "")

    def test_usage_errors_are_one_line_naming_the_help(self):
        for argv, help_of in ((["plan"], "xdeep plan --help"),
                              (["plan", "-w", GPT, "--objective", "speed"], "xdeep plan --help"),
                              (["history", "--state", "bogus"], "xdeep history --help"),
                              (["nonsense"], "xdeep --help")):
            r = run([XDEEP, *argv])
            self.assertNotEqual(r.rc, 0, r)
            self.assertEqual(r.out, "", r)
            lines = r.err.strip().splitlines()
            self.assertEqual(len(lines), 1, r)
            self.assertTrue(lines[0].startswith("xdeep: "), r)
            self.assertTrue(lines[0].endswith(f"see {help_of}"), r)

    def test_every_option_has_a_description(self):
        # CLI11 prints the description from column 30, on the option's line or the next.
        for command in ([], ["plan"], ["budget"], ["history"], ["probe"], ["presets"],
                        ["reload"], ["help"], ["status"]):
            r = run([XDEEP, *command, "--help"])
            self.assertEqual(r.rc, 0, r)
            lines = r.out.splitlines()
            options = 0
            for i, line in enumerate(lines):
                if not line.startswith("  -"):
                    continue
                options += 1
                same = len(line) > 30 and line[29] == " " and line[30] != " "
                below = (i + 1 < len(lines) and lines[i + 1].startswith(" " * 30)
                         and lines[i + 1].strip() != "")
                self.assertTrue(same or below, f"xdeep {' '.join(command)}: {line!r}")
            self.assertGreater(options, 0, r)

    def test_status_names_the_daemons_version(self):
        r = xdeep("status")
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(r.out.startswith(f"xdeepd {project_version()} at {daemon()}: serving"), r)
        self.assertEqual(r.err, "", "same version: no skew line")
        doc = json.loads(xdeep("status", "--json").out)
        self.assertEqual(doc["schema"], "xdeep.status/1")
        self.assertEqual(doc["daemon_version"], project_version())
        self.assertFalse(doc["version_skew"])
        self.assertGreaterEqual(doc["store_schema"], 2)
        self.assertGreaterEqual(doc["ledger_schema"], 3)

    def test_help_strategies_explains_every_name_a_plan_shows(self):
        text = run([XDEEP, "help", "strategies"]).out
        plan = json.loads(xdeep("plan", "-w", "gpt-1.3b", "-N", "4", "--json").out)
        rows = [plan["chosen"]] + plan["alternatives"]
        for row in rows:
            label = re.sub(r" \(.*\)$", "", row["label"])
            for part in re.split(r"x(?=[a-z])", label):
                name = re.sub(r"\d+$", "N", part.replace("+rc", ""))
                self.assertIn(name, text, f"{row['label']}: {name} is not explained")
        self.assertNotEqual(run([XDEEP, "help", "nonsense"]).rc, 0)


class PlanTableTest(StackTest):
    def test_fits_100_columns_and_keeps_the_essentials(self):
        r = xdeep("plan", "-w", GPT, env={"COLUMNS": "100"})
        self.assertEqual(r.rc, 0, r)
        lines = r.out.splitlines()
        for line in lines[1:-1]:
            self.assertLessEqual(len(line), 100, line)
        for header in ("strategy", "nodes x gpus", "mbs x acc", "step s", "time", "cost", "why"):
            self.assertIn(header, lines[1])
        self.assertTrue(lines[2].startswith("* "), r)

    def test_plugin_explain_fits_the_terminal_too(self):
        r = run(["srun", "--xdeep-tune=explain", f"--xdeep-workload={GPT}", "true"],
                env={"COLUMNS": "100"})
        self.assertEqual(r.rc, 0, r)
        table = [l for l in r.err.splitlines() if "xdeep:" in l]
        self.assertTrue(any("strategy" in l and "cost" in l and "why" in l for l in table), r)
        for line in table:
            self.assertLessEqual(len(line), 100, line)

    def test_wide_table_agrees_with_json(self):
        table = xdeep("plan", "-w", GPT, "--wide").out.splitlines()
        doc = json.loads(xdeep("plan", "-w", GPT, "--json").out)
        self.assertEqual(doc["schema"], "xdeep.plan/1")
        rows = [doc["chosen"]] + doc["alternatives"]
        header_at = next(i for i, l in enumerate(table) if l.startswith("  strategy"))
        data = []
        for line in table[header_at + 1:]:
            if line.startswith("* chosen") or not line.startswith(("* ", "  ")):
                break
            data.append(line)
        self.assertEqual(len(data), len(rows), table)
        header = table[header_at]
        for line, row in zip(data, rows):
            cells = line[2:].split("  ")
            self.assertEqual(line[2:2 + len(row["label"])], row["label"], line)
            self.assertIn(f"{row['nodes']} x {row['gpus_per_node']}", line)
            self.assertIn(f"{row['micro_batch']} x {row['grad_accumulation']}", line)
            cost_end = header.index("cost") + len("cost")
            if row["cost"] is None:
                self.assertEqual(line[cost_end - 1], "-", line)
            else:
                self.assertTrue(line[:cost_end].endswith(f"{row['cost']:.2f} {doc['currency']}"),
                                f"{header}\n{line}")
            self.assertIn(row["why"], line)

    def test_daemon_after_the_subcommand(self):
        r = run([XDEEP, "plan", "--daemon", daemon(), "-w", GPT, "--json"],
                env={"XDEEP_DAEMON": "unix:///nonexistent.sock"})
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(json.loads(r.out)["schema"], "xdeep.plan/1")

    def test_deadline_in_slurms_format(self):
        missing = xdeep("plan", "-w", GPT, "--objective", "deadline")
        self.assertEqual(missing.rc, 1, missing)
        self.assertIn("--deadline", missing.err)
        # A deadline the model can meet, written in Slurm's D-HH:MM:SS: twice the fastest plan.
        fastest = xdeep("plan", "-w", GPT, "--objective", "time", "--json")
        self.assertEqual(fastest.rc, 0, fastest)
        limit = int(2 * json.loads(fastest.out)["chosen"]["time_to_solution_s"])
        days, rest = divmod(limit, 86400)
        slurm_time = f"{days}-{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
        r = xdeep("plan", "-w", GPT, "--deadline", slurm_time, "--json")
        self.assertEqual(r.rc, 0, r)
        self.assertLessEqual(json.loads(r.out)["chosen"]["time_to_solution_s"], limit)
        tight = xdeep("plan", "-w", "gpt-1.3b", "--deadline", "0:01:00")
        self.assertEqual(tight.rc, 1, tight)
        self.assertIn("deadline", tight.err)
        self.assertNotIn("cost-under-deadline", tight.err)
        bad = xdeep("plan", "-w", GPT, "--deadline", "2:75:00")
        self.assertEqual(bad.rc, 1, bad)
        self.assertEqual(len(bad.err.strip().splitlines()), 1, bad)


class JsonAndPlotTest(StackTest):
    def test_presets_are_listed_and_accepted(self):
        r = xdeep("presets", "--json")
        self.assertEqual(r.rc, 0, r)
        names = [p["name"] for p in json.loads(r.out)["presets"]]
        self.assertIn("gpt-125m", names)
        self.assertIn("resnet50", names)
        for name in (names[0], names[-1]):
            plan = xdeep("plan", "-w", name, "--json")
            self.assertEqual(plan.rc, 0, plan)
            self.assertGreater(json.loads(plan.out)["chosen"]["nodes"], 0)

    def test_budget_json_matches_the_table(self):
        doc = json.loads(xdeep("budget", "--json").out)
        self.assertEqual(doc["schema"], "xdeep.budget/1")
        table = xdeep("budget").out.splitlines()
        self.assertEqual(len(table), len(doc["lines"]) + 2)
        for line, entry in zip(table[1:], doc["lines"]):
            self.assertEqual(line.split()[:3], [entry["scope"], entry["name"], entry["period"]])
            self.assertEqual(float(line.split()[-3]), round(entry["spent"], 2))

    def test_plan_plot_svg_and_png(self):
        svg = os.path.join(self.tmp, "plan.svg")
        r = xdeep("plan", "-w", "gpt-1.3b", "-N", "4", "--plot", svg)
        self.assertEqual(r.rc, 0, r)
        with open(svg) as f:
            text = f.read()
        self.assertIn("<svg", text)
        self.assertIn("Pareto front", text)
        self.assertIn("chosen", text)
        png = os.path.join(self.tmp, "plan.png")
        self.assertEqual(xdeep("plan", "-w", "gpt-1.3b", "-N", "4", "--plot", png).rc, 0)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["plan.png", "plan.svg"],
                         "no partial pictures left behind")
        bad = xdeep("plan", "-w", GPT, "--plot", os.path.join(self.tmp, "plan.gif"))
        self.assertEqual(bad.rc, 1, bad)
        self.assertIn(".svg or .png", bad.err)
        nowhere = xdeep("plan", "-w", GPT, "--plot", "/nonexistent/dir/p.svg")
        self.assertEqual(nowhere.rc, 1, nowhere)
        self.assertIn("not a directory", nowhere.err)

    def test_history_json_and_plot_after_a_measured_run(self):
        step = "echo 0.25 >> \"$XDEEP_REPORT\"; echo 0.27 >> \"$XDEEP_REPORT\""
        launch = run(["srun", "--xdeep-tune=auto", f"--xdeep-workload={GPT}", "bash", "-c", step],
                     timeout=120)
        self.assertEqual(launch.rc, 0, launch)
        decision = re.search(r"decision ([0-9a-f]{12})", launch.out + launch.err).group(1)
        doc = json.loads(xdeep("history", "--json", "-l", "50").out)
        self.assertEqual(doc["schema"], "xdeep.history/1")
        mine = [d for d in doc["decisions"] if d["decision_id"].startswith(decision)]
        self.assertEqual(len(mine), 1, doc)
        self.assertIn(mine[0]["measured_step_time_s"], (0.25, 0.27))
        self.assertGreater(mine[0]["predicted_step_time_s"], 0)
        launched = json.loads(xdeep("history", "--json", "--launched", "-l", "50").out)
        self.assertIn(mine[0]["decision_id"], [d["decision_id"] for d in launched["decisions"]])
        self.assertTrue(all(d["job_id"] for d in launched["decisions"]), launched)
        self.assertEqual(xdeep("plan", "-w", GPT, "--json").rc, 0)  # a plan: state none
        plans = json.loads(xdeep("history", "--json", "--state", "none", "-l", "5").out)
        self.assertGreater(len(plans["decisions"]), 0)
        self.assertTrue(all(d["state"] == "none" for d in plans["decisions"]), plans)
        self.assertLessEqual(len(plans["decisions"]), 5)
        png = os.path.join(self.tmp, "history.png")
        r = xdeep("history", "-l", "50", "--plot", png)
        self.assertEqual(r.rc, 0, r)
        with open(png, "rb") as f:
            self.assertEqual(f.read(4), b"\x89PNG")

    def test_daemon_down_is_one_line_and_no_json(self):
        for command in (["plan", "-w", GPT], ["budget"], ["history"]):
            r = run([XDEEP, *command, "--json", "--daemon", "unix:///nonexistent.sock",
                     "--timeout-ms", "2000"])
            self.assertEqual(r.rc, 1, r)
            self.assertEqual(r.out, "")
            self.assertIn("cannot reach xdeepd", r.err)
            self.assertEqual(len(r.err.strip().splitlines()), 1, r)


if __name__ == "__main__":
    unittest.main()
