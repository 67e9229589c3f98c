"""Command line: a thin layer over importable main functions.

    python -m grader check PATH/granularGas.py [--only NAME]... [--json FILE] [--rubric FILE]
    python -m grader batch SUBMISSIONS --out OUT [--jobs N] [--assignment NAME] [--force]
    python -m grader animate PATH/granularGas.py --out FILE [--scenario NAME]
    python -m grader student-kit --out DIR
    python -m grader nbgrader-course --out DIR
    python -m grader gradescope-zip --out autograder.zip

The student kit leaves out the modules of batch, nbgrader-course,
gradescope-zip and student-kit; there, only check and animate are offered.

Exit codes of check: 0 every test passed, 1 some failed, 2 the grader could
not run (bad path, not a Python file, malformed rubric, a sandbox that
cannot start, or hidden tests asked for where the sandbox cannot keep them
secret). Of batch: 0 every
submission graded (whatever its score), 1 some could not be graded (their
status says why), 2 unusable arguments, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from grader.errors import GraderError, UsageError
from grader.spec import rubric
from grader.spec.limits import ONE_THREAD, SUBMISSION_SECONDS, Limits, too_large

if TYPE_CHECKING:
    from grader.grading.results import Results
    from grader.grading.runner import GradeOptions

EXIT_PASSED, EXIT_FAILED, EXIT_UNUSABLE, EXIT_INTERRUPTED = 0, 1, 2, 130


def submission_path(text: str) -> Path:
    path = Path(text)
    if not path.exists():
        raise UsageError(f"{text}: no such file; give the path of a granularGas.py")
    if path.is_dir():
        raise UsageError(f"{text} is a folder; give the path of the granularGas.py inside it")
    if path.suffix != ".py":
        raise UsageError(f"{text} is not a Python file (.py); give the path of a granularGas.py")
    refused = too_large(text, path.stat().st_size)  # every command's limit: the same file gets the same grade
    if refused:
        raise UsageError(refused)
    return path


def make_limits(call_seconds: float = Limits.call_seconds, memory_mb: int = Limits.memory_bytes // 1024**2,
                processes: int = Limits.processes, namespaces: bool = True,
                import_seconds: float = Limits.import_seconds) -> Limits:
    """Limits from command-line values, each checked."""
    if not call_seconds > 0:
        raise UsageError(f"--timeout {call_seconds}: give a number of seconds > 0")
    if not import_seconds > 0:
        raise UsageError(f"--import-timeout {import_seconds}: give a number of seconds > 0")
    if memory_mb < 200:
        raise UsageError(f"--memory-mb {memory_mb}: numpy alone needs about 100 MB; give at least 200")
    if processes < 1:
        raise UsageError(f"--processes {processes}: give at least 1")
    return replace(Limits(), call_seconds=call_seconds, memory_bytes=memory_mb * 1024**2, processes=processes,
                   namespaces=namespaces, import_seconds=import_seconds)


def check_main(path: str, json_path: str | None = None, rubric_path: str | None = None,
               limits: Limits = Limits(), hide: list[str] | None = None, quiet: bool = False,
               html_path: str | None = None, animation_path: str | None = None,
               allow_weak_isolation: bool = False, only: list[str] | None = None, efficiency: bool = False) -> int:
    """Grade one file (only the items named in ``only``, if any), print the report, maybe write results.json,
    the feedback page and the animation of the first failing scenario; the exit code. efficiency: time the
    submission too (on anyway when the rubric has a [bonus] table)."""
    from grader.commands.animated import Animated, with_feedback_animation
    from grader.grading import runner
    from grader.grading.results import Results
    from grader.reports import feedback, gradescope_json
    from grader.reports import text as report

    submission = submission_path(path)
    if animation_path and Path(animation_path).suffix.lower() != ".gif":  # it is a GIF whatever its name says
        raise UsageError(f"--animation {animation_path}: give a name ending in .gif (animate writes .mp4, .html)")
    chosen, hidden = rubric.read(rubric_path), tuple(Path(h) for h in hide or ())
    bonus = chosen.bonus
    options = runner.GradeOptions(chosen.points, limits, None, allow_weak_isolation, hidden, tuple(only or ()),
                                  excuse_traced=chosen.excuse_traced)
    animated = bool(html_path or animation_path)
    with runner.search_box(submission, options, wanted=animated) as spare:  # the searches', then the animation's
        grade = runner.grade_file(submission, options, searches_in=spare)
        if not quiet:
            print(report.as_text(grade), end="")
        results = Results.from_report(grade)
        if efficiency or bonus is not None:
            results = _timed(submission, results, options, bonus, quiet)
        animation = (with_feedback_animation(submission, grade, results, limits, hidden, spare) if animated
                     else Animated(results, None))
    results, gif = animation.results, animation.gif
    if animation_path and gif:
        Path(animation_path).parent.mkdir(parents=True, exist_ok=True)
        Path(animation_path).write_bytes(gif)
        if not quiet:
            print(f"animation written to {animation_path}")
    elif animation_path and not quiet:  # say why nothing was written, rather than nothing
        print(f"no animation written to {animation_path}: {animation.absent}")
    if json_path:
        gradescope_json.write_json(results, json_path)
        if not quiet:
            print(f"results written to {json_path}")
    if html_path:
        page = feedback.page(path, results, submission.read_text(errors="replace"), gif, animation.absent)
        Path(html_path).parent.mkdir(parents=True, exist_ok=True)
        Path(html_path).write_text(page, encoding="utf-8")
        if not quiet:
            print(f"feedback page written to {html_path}")
    return EXIT_PASSED if grade.all_passed and not grade.import_error else EXIT_FAILED


def _timed(submission: Path, results: Results, options: GradeOptions, bonus: rubric.BonusRule | None,
           quiet: bool) -> Results:
    """The results with the submission's efficiency measured (and its bonus, if the rubric has one), printed."""
    from grader.grading import efficiency as measure
    from grader.reports import efficiency_view

    results = measure.assess(submission, results, options.limits, options.hide, bonus)
    if not quiet and results.efficiency is not None:
        print(efficiency_view.line(results.efficiency))
    return results


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def batch_main(submissions: str, out: str, jobs: int | None = None, assignment: str | None = None,
               force: bool = False, rubric_path: str | None = None, limits: Limits = Limits(),
               submission_seconds: float = SUBMISSION_SECONDS, nbgrader_db: str | None = None,
               animations: bool = True, allow_weak_isolation: bool = False, accept_single_py: bool = False,
               efficiency: bool = False, withhold_hidden: bool = False) -> int:
    """Grade a folder of submissions; print the grades table; the exit code."""
    from grader.commands.batch import pool as batch
    from grader.commands.batch import submissions as found

    batch.check_output(Path(out), Path(submissions))  # before reading anyone's file
    discovery = found.scan(Path(submissions), assignment, exclude=(Path(out),), accept_single_py=accept_single_py)
    if not submission_seconds > 0:
        raise UsageError(f"--submission-timeout {submission_seconds}: give a number of seconds > 0")
    if nbgrader_db:
        # Refused before grading, not after: nothing graded is then left unsaved.
        try:
            import nbgrader.api  # noqa: F401
        except ImportError:
            raise UsageError("--nbgrader-db needs nbgrader: pip install \"granular-grader[nbgrader]\"") from None
        if "://" not in nbgrader_db and not Path(nbgrader_db).resolve().parent.is_dir():
            raise UsageError(f"--nbgrader-db {nbgrader_db}: its folder does not exist; give the course's "
                             "gradebook.db")
    chosen = rubric.read(rubric_path)
    options = batch.Options(force=force, limits=limits, points=chosen.points,
                            submission_seconds=submission_seconds, animations=animations,
                            allow_weak_isolation=allow_weak_isolation, efficiency=efficiency,
                            bonus=chosen.bonus, excuse_traced=chosen.excuse_traced, withhold_hidden=withhold_hidden)
    if jobs is not None:
        options.jobs = jobs
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        outcomes = batch.run(list(discovery.submissions), Path(submissions), Path(out), options,
                             skipped=discovery.skipped)
    except KeyboardInterrupt:
        grades = Path(out) / "grades.csv"
        where = (f"the grades finished so far are in {grades}" if grades.is_file()
                 else "before any grade was written")  # a review was sent to a folder never made
        print(f"interrupted: {where}; run the same command again to grade the rest", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(batch.grades_table(outcomes), end="")
    if nbgrader_db:
        from grader.commands.courses import nbgrader_course

        url = nbgrader_db if "://" in nbgrader_db else f"sqlite:///{Path(nbgrader_db).resolve()}"
        written = nbgrader_course.export_batch(url, assignment or nbgrader_course.ASSIGNMENT, outcomes,
                                                options.points or rubric.default_points())
        print(f"{written} students written to the nbgrader gradebook {nbgrader_db} (assignment "
              f"{assignment or nbgrader_course.ASSIGNMENT}): run nbgrader export for the course CSV")
    print(f"\ngrades: {Path(out) / 'grades.csv'}   summary: {Path(out) / 'summary.html'}   "
          f"feedback: {Path(out) / 'students' / '<student>' / 'feedback.html'}")
    ungraded = [o for o in outcomes if o.results is None]
    return EXIT_FAILED if ungraded else EXIT_PASSED


def kit_main(out: str) -> int:
    from grader.commands import kit

    folder = kit.build(Path(out))
    print(f"student kit written to {folder}")
    return EXIT_PASSED


def course_main(out: str, rubric_path: str | None = None, limits: Limits = Limits(),
                allow_weak_isolation: bool = False) -> int:
    from grader.commands.courses import nbgrader_course

    chosen = rubric.read(rubric_path)
    folder = nbgrader_course.write_course(Path(out), chosen.points, limits, allow_weak_isolation,
                                          chosen.excuse_traced)
    print(f"nbgrader course written to {folder}: cd there, then nbgrader generate_assignment "
          f"{nbgrader_course.ASSIGNMENT}")
    return EXIT_PASSED


def gradescope_main(out: str, hidden_visibility: str, rubric_path: str | None = None, limits: Limits = Limits(),
                    allow_weak_isolation: bool = False) -> int:
    from grader.commands.courses import gradescope

    rubric.read(rubric_path)  # refuse a bad rubric now, not on Gradescope
    path = gradescope.build_zip(Path(out), hidden_visibility, Path(rubric_path).read_text() if rubric_path else None,
                                limits, allow_weak_isolation)
    print(f"Gradescope autograder written to {path}: upload it as the assignment's autograder (zip file)")
    return EXIT_PASSED


def animate_main(args: argparse.Namespace) -> int:
    from grader.animation import render as animation

    print(animation.animate_main(args.path, args.out, args.scenario, args.grains, args.duration, args.seed, args.r,
                                 args.timeout))  # an AnimationError is a UsageError: caught in main, once
    return EXIT_PASSED


RUBRIC_HELP = "TOML rubric: [points], and maybe [bonus] and [grading] (a sample: the checkout's examples/rubric.toml)"


def _limit_options(parser: argparse.ArgumentParser) -> None:
    limits = parser.add_argument_group("limits of the submission's process")
    limits.add_argument("--timeout", type=float, default=Limits.call_seconds, metavar="S",
                        help="CPU seconds allowed for one call of a function (default %(default)s; the wall "
                             "clock is only a generous backstop)")
    limits.add_argument("--import-timeout", type=float, default=Limits.import_seconds, metavar="S",
                        help="CPU seconds allowed to import the file (default %(default)s)")
    limits.add_argument("--memory-mb", type=int, default=Limits.memory_bytes // 1024**2, metavar="MB",
                        help="address space of the submission's process (default %(default)s)")
    limits.add_argument("--processes", type=int, default=Limits.processes, metavar="N",
                        help="processes the submission may run at once (default %(default)s)")
    limits.add_argument("--no-namespaces", action="store_true",
                        help="do not use Linux namespaces even where permitted (resource limits only; hidden "
                             "tests then need --allow-weak-isolation)")
    limits.add_argument("--allow-weak-isolation", action="store_true",
                        help="run the hidden tests even where the sandbox cannot keep them secret (every result "
                             "says so)")


def _command(commands: argparse._SubParsersAction, module: str, name: str, text: str) -> argparse.ArgumentParser:
    """The parser of an instructor's command; where its module is absent (the student kit ships only check and
    animate), a detached parser, so that the command is not offered at all rather than failing with a traceback."""
    if importlib.util.find_spec(module) is None:
        return argparse.ArgumentParser(prog=name, add_help=False)
    return commands.add_parser(name, help=text)


def _add_check(commands: argparse._SubParsersAction) -> None:
    """check FILE: grade one submission."""
    check = commands.add_parser("check", help="grade one granularGas.py")
    check.add_argument("path", help="the granularGas.py to grade")
    check.add_argument("--json", dest="json_path", metavar="FILE", help="write Gradescope results.json here")
    check.add_argument("--rubric", metavar="FILE", help=RUBRIC_HELP)
    check.add_argument("--html", metavar="FILE", help="write the feedback page (with an animation of the first "
                                                      "failing scenario) here")
    check.add_argument("--animation", metavar="FILE", help="write the animation of the first failing scenario "
                                                           "(.gif) here")
    check.add_argument("--quiet", action="store_true", help="print nothing (with --json)")
    check.add_argument("--efficiency", action="store_true", help="also time minimum_contact_time and update on "
                       "gases of growing N (a few seconds more; on when the rubric has a [bonus] table)")
    check.add_argument("--only", action="append", metavar="NAME",
                       help="check only this function or scenario (repeatable), e.g. --only contact_time_walls")
    check.add_argument("--hide", action="append", metavar="DIR", help="a folder the submission must not see")
    _limit_options(check)


def _add_batch(commands: argparse._SubParsersAction) -> None:
    """batch SUBMISSIONS --out OUT: grade a folder (absent from the student kit)."""
    batch = _command(commands, "grader.commands.batch", "batch", text="grade a folder of submissions in parallel")
    batch.add_argument("submissions", help="folder with <student>/granularGas.py, <student>.py, or nbgrader's "
                                           "submitted/<student>/<assignment>/granularGas.py")
    batch.add_argument("--out", required=True, metavar="OUT", help="folder for grades.csv, summary.html and "
                                                                   "students/<student>/ results and feedback")
    batch.add_argument("--jobs", type=int, metavar="N", help="submissions graded at once (default: all cores)")
    batch.add_argument("--assignment", metavar="NAME", help="the nbgrader assignment name (nbgrader layout)")
    batch.add_argument("--force", action="store_true", help="regrade submissions that have not changed")
    batch.add_argument("--accept-single-py", action="store_true",
                       help="grade a student's folder's only .py file when it has no granularGas.py (hw3.py, "
                            "GranularGas.py), and <student>.PY files; each such grade is noted")
    batch.add_argument("--rubric", metavar="FILE", help=RUBRIC_HELP)
    batch.add_argument("--efficiency", action="store_true", help="also time each submission on gases of growing N "
                       "(a few seconds more each; on when the rubric has a [bonus] table)")
    batch.add_argument("--no-animations", action="store_true",
                       help="no animation in the feedback pages (a few seconds less per failing submission)")
    batch.add_argument("--withhold-hidden", action="store_true",
                       help="feedback pages without the hidden tests' inputs, answers or the file's output")
    batch.add_argument("--nbgrader-db", metavar="PATH", help="also write the grades into this nbgrader gradebook "
                       "(gradebook.db of the course, or a database URL)")
    batch.add_argument("--submission-timeout", type=float, default=SUBMISSION_SECONDS, metavar="S",
                       help="wall-clock seconds for the whole grading of one submission, a backstop: the "
                            "limits that decide grades count CPU time (default %(default)s)")
    _limit_options(batch)


def _add_animate(commands: argparse._SubParsersAction) -> None:
    """animate FILE --out FILE: the submission's gas beside the reference's."""
    animate = commands.add_parser("animate", help="the student's gas next to the reference's, as .gif/.mp4/.html")
    animate.add_argument("path", help="the granularGas.py to animate")
    animate.add_argument("--out", required=True, metavar="FILE", help="output file: .gif, .mp4 (ffmpeg) or .html")
    animate.add_argument("--scenario", default="gas", help="single, head_on, unequal, c12, dem, channel, gas (default)")
    animate.add_argument("--grains", type=int, default=30, metavar="N",
                         help="grains of the gas (default 30: the gas whose reference run the kit ships)")
    animate.add_argument("--duration", type=float, metavar="T", help="simulated time (default: the scenario's)")
    animate.add_argument("--seed", type=int, default=0, metavar="S", help="random seed of the gas (default 0)")
    animate.add_argument("--r", type=float, metavar="R", help="restitution (default: the scenario's)")
    animate.add_argument("--timeout", type=float, default=20.0, metavar="S",
                         help="seconds allowed for one call of update (default %(default)s)")


def _add_course_commands(commands: argparse._SubParsersAction) -> None:
    """nbgrader-course, gradescope-zip and student-kit (absent from the student kit)."""
    course = _command(commands, "grader.commands.courses", "nbgrader-course",
                      text="write an nbgrader course folder for the assignment")
    course.add_argument("--out", required=True, metavar="DIR", help="the course folder to write")
    course.add_argument("--rubric", metavar="FILE", help=RUBRIC_HELP + "; sets the cells' points")
    _limit_options(course)
    zipped = _command(commands, "grader.commands.courses", "gradescope-zip",
                      text="build the Gradescope autograder bundle")
    zipped.add_argument("--out", required=True, metavar="FILE", help="the .zip to write")
    zipped.add_argument("--hidden-visibility", default=rubric.DEFAULT_HIDDEN_VISIBILITY,
                        help="when students see the hidden tests: " + ", ".join(rubric.HIDDEN_VISIBILITIES)
                             + " (default %(default)s)")
    zipped.add_argument("--rubric", metavar="FILE", help=RUBRIC_HELP)
    _limit_options(zipped)
    kit = _command(commands, "grader.commands.kit", "student-kit",
                   text="build what students download (no reference inside)")
    kit.add_argument("--out", required=True, metavar="DIR", help="folder to write the kit into")


def parser() -> argparse.ArgumentParser:
    """The command line: a sub-command each (commands whose modules are absent, as in the kit, are not offered)."""
    top = argparse.ArgumentParser(prog="granular-grade", description="Grade granularGas.py submissions.")
    commands = top.add_subparsers(dest="command", required=True)
    for add in (_add_check, _add_batch, _add_animate, _add_course_commands):
        add(commands)
    return top


def run(args: argparse.Namespace) -> int:
    """Run the parsed command; its exit code."""
    if args.command == "student-kit":
        return kit_main(args.out)
    if args.command == "animate":
        return animate_main(args)
    limits = make_limits(args.timeout, args.memory_mb, args.processes, not args.no_namespaces, args.import_timeout)
    if args.command == "nbgrader-course":
        return course_main(args.out, args.rubric, limits, args.allow_weak_isolation)
    if args.command == "gradescope-zip":
        return gradescope_main(args.out, args.hidden_visibility, args.rubric, limits, args.allow_weak_isolation)
    if args.command == "check":
        return check_main(args.path, args.json_path, args.rubric, limits, args.hide, args.quiet, args.html,
                          args.animation, args.allow_weak_isolation, args.only, args.efficiency)
    return batch_main(args.submissions, args.out, args.jobs, args.assignment, args.force, args.rubric, limits,
                      args.submission_timeout, args.nbgrader_db, not args.no_animations, args.allow_weak_isolation,
                      args.accept_single_py, args.efficiency, args.withhold_hidden)


def one_thread() -> None:
    """Give numpy one BLAS thread (spec.limits.ONE_THREAD), unless the environment says otherwise: call it before
    numpy loads (importing this module loads none)."""
    for name, value in ONE_THREAD.items():
        os.environ.setdefault(name, value)


def main(argv: list[str] | None = None) -> int:
    """The command line's entry point: every GraderError is caught here, once, and exits with 2."""
    one_thread()
    args = parser().parse_args(argv)
    from grader.sandbox import isolation

    isolation.cleanup_stale()  # sandbox folders of grader processes that were killed
    try:
        code = run(args)
        sys.stdout.flush()  # here, not at exit: a closed pipe is then caught below
        return code
    except GraderError as exc:
        print(f"granular-grade: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except BrokenPipeError:  # the output piped into a program that stopped reading (| head): what was written stands
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error as Python flushes at exit
        return 128 + signal.SIGPIPE  # what a shell reports for a program that stopped on a closed pipe


if __name__ == "__main__":
    sys.exit(main())
